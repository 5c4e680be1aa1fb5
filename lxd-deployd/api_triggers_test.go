package main

import (
	"strings"
	"testing"
)

// TestTriggersAPI: the kill switch and a shape's resume answer 200, or a 409 that changes
// nothing; a rollback's dry run answers the plan and changes nothing; bad input is a 400.
func TestTriggersAPI(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")

	a.expect("POST", "/1.0/deployments/dep1/triggers/resume", "", 409, "nothing to resume")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/triggers/resume", "", 409, "not suspended")
	a.expect("POST", "/1.0/deployments/dep1/triggers/suspend", `{"notes":"`+strings.Repeat("x", 5000)+`"}`, 400, "")
	a.expect("POST", "/1.0/deployments/dep1/triggers/suspend", `{"notes":"freeze"}`, 200, "")
	a.expect("POST", "/1.0/deployments/dep1/triggers/suspend", "", 409, "suspended already")
	d := a.expect("GET", "/1.0/deployments/dep1", "", 200, "")["metadata"].(map[string]any)
	suspended, _ := d["triggers_suspended"].(map[string]any)
	if suspended["reason"] != "freeze" || suspended["since"] == nil {
		t.Fatalf("deployment: %v", d)
	}

	a.expect("POST", "/1.0/deployments/dep1/triggers/resume", "", 200, "")
	d = a.expect("GET", "/1.0/deployments/dep1", "", 200, "")["metadata"].(map[string]any)
	if d["triggers_suspended"] != nil {
		t.Fatalf("deployment after resume: %v", d)
	}

	// A dry run of a bounds rollback (no LXD needed): the plan, nothing changed.
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"scaling_maximum":7}`, 200, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollback?dry-run=maybe", `{"template":false,"scaling":true}`, 400, "dry-run")
	plan := a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollback?dry-run=1", `{"template":false,"scaling":true}`, 200, "")["metadata"].(map[string]any)
	changes, _ := plan["changes"].([]any)
	if plan["dry_run"] != true || plan["revision"] != float64(3) || len(changes) != 1 || changes[0].(map[string]any)["field"] != "scaling_maximum" {
		t.Fatalf("plan: %v", plan)
	}

	shape := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
	if shape["revision"] != float64(2) || shape["scaling_maximum"] != float64(7) {
		t.Fatalf("a dry run changed the shape: %v", shape)
	}
}
