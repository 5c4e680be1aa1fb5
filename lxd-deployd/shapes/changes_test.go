package shapes

import (
	"reflect"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestShapeChanges(t *testing.T) {
	base := api.DeploymentShapePut{
		Config:           map[string]string{},
		InstanceTemplate: lxdapi.InstancesPost{Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}},
		ScalingMaximum:   3,
	}
	tests := []struct {
		name   string
		change func(p *api.DeploymentShapePut)
		want   []string
	}{
		{"nothing", func(p *api.DeploymentShapePut) {}, nil},
		{"nil and empty config are alike", func(p *api.DeploymentShapePut) { p.Config = nil }, nil},
		{"nil and empty instance config are alike", func(p *api.DeploymentShapePut) { p.InstanceTemplate.Config = map[string]string{} }, nil},
		{"empty profile list is not the default", func(p *api.DeploymentShapePut) { p.InstanceTemplate.Profiles = []string{} }, []string{"instance_template.profiles"}},
		{"profiles", func(p *api.DeploymentShapePut) { p.InstanceTemplate.Profiles = []string{"default", "big"} }, []string{"instance_template.profiles"}},
		{"instance config key", func(p *api.DeploymentShapePut) {
			p.InstanceTemplate.Config = map[string]string{"limits.cpu": "2"}
		}, []string{"instance_template.config.limits.cpu"}},
		{"device", func(p *api.DeploymentShapePut) {
			p.InstanceTemplate.Devices = map[string]map[string]string{"eth0": {"type": "nic", "network": "lxdbr0"}}
		}, []string{"instance_template.devices.eth0.network", "instance_template.devices.eth0.type"}},
		{"bounds", func(p *api.DeploymentShapePut) { p.ScalingMinimum = 1; p.ScalingMaximum = 4 }, []string{"scaling_maximum", "scaling_minimum"}},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changed := base
			changed.InstanceTemplate.Config = nil
			tt.change(&changed)
			var fields []string
			for _, c := range Changes(base, changed) {
				fields = append(fields, c.Field)
			}

			if !reflect.DeepEqual(fields, tt.want) {
				t.Errorf("changed fields = %v, want %v", fields, tt.want)
			}
		})
	}

	// A removed config key has no new value.
	old := base
	old.Config = map[string]string{"user.a": "1"}
	changes := Changes(old, base)
	if len(changes) != 1 || changes[0].Old != "1" || changes[0].New != nil {
		t.Errorf("removed key: %+v", changes)
	}
}

func TestTemplateChanged(t *testing.T) {
	base := api.DeploymentShapePut{InstanceTemplate: lxdapi.InstancesPost{Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}}, ScalingMaximum: 3}
	bounds := base
	bounds.ScalingMinimum, bounds.ScalingMaximum, bounds.Description = 1, 5, "new words"
	if TemplateChanged(base, bounds) {
		t.Error("bounds and description leave instances as they are")
	}

	image := base
	image.InstanceTemplate.Source.Alias = "alpine"
	config := base
	config.Config = map[string]string{"user.a": "1"}
	if !TemplateChanged(base, image) || !TemplateChanged(base, config) {
		t.Error("a new image or config makes different instances")
	}
}
