package shapes

import (
	"reflect"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A traffic change is diffed field by field, like placement, and makes no instance
// outdated: the door follows it, the instances stay.
func TestTrafficChanges(t *testing.T) {
	before := api.DeploymentShapePut{ScalingMaximum: 3, Traffic: &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080"}}
	after := before
	after.Traffic = &api.DeploymentShapeTraffic{Port: 8080, Listen: "127.0.0.1:8080", DrainTimeout: "10s"}
	var fields []string
	for _, c := range Changes(before, after) {
		fields = append(fields, c.Field)
	}

	if want := []string{"traffic.drain_timeout", "traffic.port"}; !reflect.DeepEqual(fields, want) {
		t.Fatalf("changes %v, want %v", fields, want)
	}

	if TemplateChanged(before, after) || TemplateChanged(api.DeploymentShapePut{ScalingMaximum: 3}, after) {
		t.Fatal("a traffic change outdates the instances")
	}
}
