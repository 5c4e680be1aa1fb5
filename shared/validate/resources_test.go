package validate

import (
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestResourceBounds(t *testing.T) {
	tests := []struct {
		name   string
		bounds map[string]api.DeploymentShapeResourceBound
		config map[string]string
		says   string // "" for valid
	}{
		{name: "none"},
		{name: "memory", bounds: map[string]api.DeploymentShapeResourceBound{"limits.memory": {Minimum: "64MiB", Maximum: "2GiB"}}, config: map[string]string{"limits.memory": "128MiB"}},
		{name: "cpu set counted", bounds: map[string]api.DeploymentShapeResourceBound{"limits.cpu": {Maximum: "2"}}, config: map[string]string{"limits.cpu": "0-1"}},
		{name: "cpu set too wide", bounds: map[string]api.DeploymentShapeResourceBound{"limits.cpu": {Maximum: "2"}}, config: map[string]string{"limits.cpu": "0-2"}, says: "above the shape's resource_bounds maximum"},
		{name: "template above", bounds: map[string]api.DeploymentShapeResourceBound{"limits.memory": {Maximum: "512MiB"}}, config: map[string]string{"limits.memory": "1GiB"}, says: "instance_template.config: limits.memory 1GiB is above"},
		{name: "template below", bounds: map[string]api.DeploymentShapeResourceBound{"limits.memory": {Minimum: "512MiB"}}, config: map[string]string{"limits.memory": "64MiB"}, says: "below"},
		{name: "template percentage", bounds: map[string]api.DeploymentShapeResourceBound{"limits.memory": {Maximum: "512MiB"}}, config: map[string]string{"limits.memory": "50%"}, says: "percentage"},
		{name: "inverted", bounds: map[string]api.DeploymentShapeResourceBound{"limits.cpu": {Minimum: "4", Maximum: "2"}}, says: "minimum 4 is above the maximum 2"},
		{name: "empty", bounds: map[string]api.DeploymentShapeResourceBound{"limits.cpu": {}}, says: "needs a minimum"},
		{name: "unknown key", bounds: map[string]api.DeploymentShapeResourceBound{"limits.processes": {Maximum: "10"}}, says: "cannot be resized"},
		{name: "bad size", bounds: map[string]api.DeploymentShapeResourceBound{"limits.memory": {Maximum: "big"}}, says: "not a size"},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			put := api.DeploymentShapePut{ResourceBounds: tt.bounds, InstanceTemplate: lxdapi.InstancesPost{InstancePut: lxdapi.InstancePut{Config: tt.config}}}
			err := ResourceBounds(put)
			if tt.says == "" && err != nil || tt.says != "" && (err == nil || !strings.Contains(err.Error(), tt.says)) {
				t.Fatalf("want %q, got %v", tt.says, err)
			}
		})
	}
}
