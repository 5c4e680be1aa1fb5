package main

import (
	"strings"
	"testing"
)

// A shape's schedule: bad actions are 400s naming the field that change nothing; a good
// one is stored, revisioned, and shown with its next occurrences.
func TestShapeScheduleAPI(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")

	bad := []struct{ body, want string }{
		{`{"schedule":[{"name":"bh","cron":"0 8 * * 1-5","time_zone":"Europe/Pariss","scaling_minimum":4,"scaling_maximum":20}]}`, "schedule[0].time_zone: \"Europe/Pariss\" is not a known IANA time zone"},
		{`{"schedule":[{"name":"bh","cron":"0 8 * *","scaling_minimum":4,"scaling_maximum":20}]}`, "schedule[0].cron"},
		{`{"schedule":[{"name":"bh","cron":"0 25 * * *","scaling_minimum":4,"scaling_maximum":20}]}`, "schedule[0].cron: hour field"},
		{`{"schedule":[{"name":"bh","cron":"0 8 * * *","scaling_minimum":21,"scaling_maximum":20}]}`, "schedule[0].scaling_maximum (20) must be at least schedule[0].scaling_minimum (21)"},
		{`{"schedule":[{"name":"bh","cron":"0 8 * * *","scaling_maximum":20}]}`, "schedule[0].scaling_minimum is required"},
		{`{"schedule":[{"name":"bh","cron":"0 8 * * *","scaling_minimum":1,"scaling_maximum":2,"size":3}]}`, "schedule[0].size"},
	}
	for _, tc := range bad {
		a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", tc.body, 400, tc.want)
	}

	// Creating with a bad schedule is refused too.
	a.expect("POST", "/1.0/deployments/dep1/shapes", `{"name":"api","scaling_maximum":1,"schedule":[{"name":"x","cron":"bad","scaling_minimum":0,"scaling_maximum":1}]}`, 400, "schedule[0].cron")

	_, shape, _ := a.do("GET", "/1.0/deployments/dep1/shapes/web", "")
	metadata := shape["metadata"].(map[string]any)
	if metadata["schedule"] != nil || metadata["revision"].(float64) != 1 {
		t.Fatalf("refused changes changed the shape: %v", metadata)
	}

	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"schedule":[{"name":"business-hours","cron":"0 8 * * 1-5","time_zone":"Europe/Paris","scaling_minimum":2,"scaling_maximum":3}]}`, 200, "")
	_, shape, _ = a.do("GET", "/1.0/deployments/dep1/shapes/web", "")
	metadata = shape["metadata"].(map[string]any)
	if metadata["revision"].(float64) != 2 || len(metadata["schedule"].([]any)) != 1 {
		t.Fatalf("schedule not stored and revisioned: %v", metadata)
	}

	view := a.expect("GET", "/1.0/deployments/dep1/shapes/web/schedule", "", 200, "")["metadata"].(map[string]any)
	actions := view["actions"].([]any)
	next := actions[0].(map[string]any)["next"].([]any)
	if len(actions) != 1 || len(next) != scheduleShown || !strings.HasSuffix(next[0].(string), "T08:00:00+01:00") && !strings.HasSuffix(next[0].(string), "T08:00:00+02:00") {
		t.Fatalf("schedule view: %v", view)
	}

	a.expect("GET", "/1.0/deployments/dep1/shapes/nope/schedule", "", 404, "nope")
}
