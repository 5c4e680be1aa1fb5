package main

import (
	"fmt"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
)

// patchShapeBody is a shape whose every map and pointer field is already set, so that a
// PATCH changes a value inside an existing map or struct: the case a shallow copy of the
// current shape hid (before and after shared the map and compared equal).
const patchShapeBody = `{"name":"web","config":{"user.a":"1"},
"instance_template":{"source":{"type":"image","alias":"busybox"},"config":{"user.v":"1"},"devices":{"eth0":{"type":"nic","network":"br0"}},"profiles":["default"]},
"scaling_minimum":0,"scaling_maximum":3,
"rollout":{"strategy":"rolling","max_surge":1},
"health":{"command":["true"],"interval":"10s"},
"hooks":{"terminate_timeout":"1m"},
"warm_pool":{"size":1}}`

// TestPatchMakesRevision checks that a PATCH of a value inside every map and pointer field
// of a shape makes a revision, as PUT does, and says whether instances turn outdated.
func TestPatchMakesRevision(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", patchShapeBody, 201, "")

	tests := []struct {
		name     string
		body     string
		template bool // the change makes different instances (a rollout's business)
	}{
		{"config key", `{"config":{"user.a":"2"}}`, true},
		{"template config", `{"instance_template":{"config":{"user.v":"2"}}}`, true},
		{"template devices", `{"instance_template":{"devices":{"eth0":{"type":"nic","network":"br1"}}}}`, true},
		{"template profiles", `{"instance_template":{"profiles":["default","extra"]}}`, true},
		{"template source", `{"instance_template":{"source":{"alias":"alpine"}}}`, true},
		{"bounds", `{"scaling_maximum":4}`, false},
		{"rollout", `{"rollout":{"max_surge":2}}`, false},
		{"health command", `{"health":{"command":["false"]}}`, false},
		{"hooks", `{"hooks":{"terminate_timeout":"2m"}}`, false},
		{"warm pool", `{"warm_pool":{"size":2}}`, false},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
			a.expect("PATCH", "/1.0/deployments/dep1/shapes/web?notes="+strings.ReplaceAll(tt.name, " ", "-"), tt.body, 200, "")
			after := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
			revision := int(before["revision"].(float64)) + 1
			if after["revision"] != float64(revision) {
				t.Fatalf("PATCH %s: revision %v, want %d (before %v)", tt.body, after["revision"], revision, before["revision"])
			}

			if fmt.Sprint(before) == fmt.Sprint(after) {
				t.Fatalf("PATCH %s changed nothing: %v", tt.body, after)
			}

			got := a.expect("GET", fmt.Sprintf("/1.0/deployments/dep1/shapes/web/revisions/%d", revision), "", 200, "")["metadata"].(map[string]any)
			if got["cause"] != rollout.CauseAPI || got["notes"] != strings.ReplaceAll(tt.name, " ", "-") {
				t.Fatalf("revision %d: %v", revision, got)
			}

			// The same body again changes nothing, so it makes no revision.
			a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", tt.body, 200, "")
			again := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
			if again["revision"] != float64(revision) {
				t.Fatalf("PATCH %s twice: revision %v, want %d", tt.body, again["revision"], revision)
			}
		})
	}
}
