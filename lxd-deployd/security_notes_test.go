package main

import (
	"net/url"
	"strings"
	"testing"
)

// TestNotesCapped: every place that takes notes refuses more than 4 KiB with a 400 that
// says so, since notes are copied into revisions, rollouts and activity entries.
func TestNotesCapped(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	long := strings.Repeat("n", 4097)
	fits := strings.Repeat("n", 4096)

	a.expect("POST", "/1.0/deployments/dep1/shapes?notes="+long, shapeBody, 400, "notes are 4097 bytes")
	a.expect("POST", "/1.0/deployments/dep1/shapes?notes="+fits, shapeBody, 201, "")
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web?notes="+url.QueryEscape(long), `{"scaling_maximum":5}`, 400, "notes")
	a.expect("PUT", "/1.0/deployments/dep1/shapes/web?notes="+long, shapeBody, 400, "notes")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollback", `{"revision":1,"notes":"`+long+`"}`, 400, "notes")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts", `{"notes":"`+long+`"}`, 400, "notes")

	revisions := a.expect("GET", "/1.0/deployments/dep1/shapes/web/revisions?recursion=1", "", 200, "")["metadata"].([]any)
	if len(revisions) != 1 || len(revisions[0].(map[string]any)["notes"].(string)) != 4096 {
		t.Fatalf("refused changes made revisions: %d", len(revisions))
	}
}
