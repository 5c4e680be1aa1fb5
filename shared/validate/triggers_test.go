package validate

import (
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestRolloutTriggers(t *testing.T) {
	no := false
	config := api.DeploymentShapeTrigger{Type: api.RolloutTriggerConfigChange}
	image := api.DeploymentShapeTrigger{Type: api.RolloutTriggerImageChange, Automatic: &no}
	cases := []struct {
		rollout api.DeploymentShapeRollout
		err     string
	}{
		{api.DeploymentShapeRollout{Trigger: api.RolloutTriggerImageChange}, ""},
		{api.DeploymentShapeRollout{Triggers: []api.DeploymentShapeTrigger{config, image}}, ""},
		{api.DeploymentShapeRollout{Trigger: api.RolloutTriggerManual, Triggers: []api.DeploymentShapeTrigger{config}}, ""},
		{api.DeploymentShapeRollout{Trigger: api.RolloutTriggerConfigChange, Triggers: []api.DeploymentShapeTrigger{image}}, "drop trigger"},
		{api.DeploymentShapeRollout{Triggers: []api.DeploymentShapeTrigger{{Type: "manual"}}}, "no triggers is manual"},
		{api.DeploymentShapeRollout{Triggers: []api.DeploymentShapeTrigger{config, config}}, "twice"},
		{api.DeploymentShapeRollout{Triggers: []api.DeploymentShapeTrigger{{Type: api.RolloutTriggerConfigChange, Automatic: &no}}}, "image-change only"},
	}

	for _, c := range cases {
		err := Rollout(c.rollout)
		if (c.err == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v: %v, want %q", c.rollout, err, c.err)
		}
	}

	// trigger and triggers alike say which triggers a shape has, and whether they roll out.
	r := api.DeploymentShapeRollout{Triggers: []api.DeploymentShapeTrigger{config, image}}
	if has, auto := r.TriggerOf(api.RolloutTriggerImageChange); !has || auto {
		t.Error("image-change with automatic false")
	}

	if has, auto := r.TriggerOf(api.RolloutTriggerConfigChange); !has || !auto {
		t.Error("config-change in triggers")
	}

	if has, auto := (api.DeploymentShapeRollout{Trigger: api.RolloutTriggerImageChange}).TriggerOf(api.RolloutTriggerImageChange); !has || !auto {
		t.Error("the trigger field")
	}
}
