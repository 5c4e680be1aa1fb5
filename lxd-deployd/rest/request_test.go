package rest

import (
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestPatchBaseIsDeep checks that decoding a PATCH onto the base leaves the current value
// untouched, through maps, nested maps, slices and pointers.
func TestPatchBaseIsDeep(t *testing.T) {
	current := api.DeploymentShapePut{
		Config: map[string]string{"user.a": "1"},
		Health: &api.DeploymentShapeHealth{Command: []string{"true"}},
	}

	current.InstanceTemplate.Config = map[string]string{"user.v": "1"}
	current.InstanceTemplate.Devices = map[string]map[string]string{"eth0": {"network": "br0"}}
	current.InstanceTemplate.Profiles = []string{"default"}
	base, err := PatchBase(current)
	if err != nil {
		t.Fatal(err)
	}

	err = UnmarshalBody([]byte(`{"config":{"user.a":"2"},"instance_template":{"config":{"user.v":"2"},"devices":{"eth0":{"network":"br1"}},"profiles":["x"]},"health":{"command":["false"]}}`), &base)
	if err != nil {
		t.Fatal(err)
	}

	if current.Config["user.a"] != "1" || current.InstanceTemplate.Config["user.v"] != "1" || current.InstanceTemplate.Devices["eth0"]["network"] != "br0" ||
		current.InstanceTemplate.Profiles[0] != "default" || current.Health.Command[0] != "true" {
		t.Fatalf("decoding a patch changed the current value: %+v %+v", current, current.Health)
	}

	if base.Config["user.a"] != "2" || base.InstanceTemplate.Devices["eth0"]["network"] != "br1" || base.Health.Command[0] != "false" {
		t.Fatalf("the patch did not apply: %+v %+v", base, base.Health)
	}
}
