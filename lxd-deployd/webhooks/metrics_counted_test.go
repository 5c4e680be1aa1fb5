package webhooks

import (
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestMetricsEventCountsAsTheBounds: a metrics event lists the instances scaling_current
// counts and no others, so a governor adding them up gets the size the bounds hold (it
// listed replaced and missing instances too).
func TestMetricsEventCountsAsTheBounds(t *testing.T) {
	c := &Collector{previous: map[string]timedSample{}}
	d := db.Deployment{Deployment: api.Deployment{DeploymentShapes: map[string]api.DeploymentShape{
		"web": {ScalingCurrent: 2},
	}}}

	var rows []db.Instance
	for name, state := range map[string]string{
		"creating": db.InstanceCreating, "created": db.InstanceCreated,
		"deleting": db.InstanceDeleting, "replacing": db.InstanceReplacing, "missing": db.InstanceMissing,
	} {
		rows = append(rows, db.Instance{Project: "default", Shape: "web", Name: name, State: state})
	}

	got := c.metadata(d, rows, map[string]Sample{}).Shapes["web"]
	if len(got.Instances) != got.ScalingCurrent {
		t.Fatalf("%d instances listed for scaling_current %d: %v", len(got.Instances), got.ScalingCurrent, got.Instances)
	}

	for _, name := range []string{"creating", "created"} {
		if _, ok := got.Instances[name]; !ok {
			t.Errorf("the %s instance counts and must be listed", name)
		}
	}
}
