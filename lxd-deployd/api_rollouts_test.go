package main

import (
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// TestRevisionsAndRolloutsAPI covers what needs no LXD: revisions of every change, the
// diff, bad input refused with nothing changed, rollouts started, refused and acted on.
func TestRevisionsAndRolloutsAPI(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes?notes=first", shapeBody, 201, "")
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web?notes=bigger", `{"scaling_maximum":5}`, 200, "")
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"scaling_maximum":5}`, 200, "") // no change, no revision

	shape := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
	if shape["revision"] != float64(2) {
		t.Fatalf("shape revision: %v", shape["revision"])
	}

	revisions := a.expect("GET", "/1.0/deployments/dep1/shapes/web/revisions?recursion=1", "", 200, "")["metadata"].([]any)
	latest := revisions[0].(map[string]any)
	if len(revisions) != 2 || latest["notes"] != "bigger" || latest["cause"] != "api" || latest["requestor"].(map[string]any)["protocol"] != "unix" {
		t.Fatalf("revisions: %v", revisions)
	}

	diff := a.expect("GET", "/1.0/deployments/dep1/shapes/web/revisions/2?diff=1", "", 200, "")["metadata"].(map[string]any)
	changes := diff["changes"].([]any)
	if len(changes) != 1 || changes[0].(map[string]any)["field"] != "scaling_maximum" {
		t.Fatalf("diff: %v", diff)
	}

	tests := []struct {
		method, path, body string
		status             int
		want               string
	}{
		{"GET", "/1.0/deployments/dep1/shapes/web/revisions/0", "", 400, "revision"},
		{"GET", "/1.0/deployments/dep1/shapes/web/revisions/x", "", 400, "revision"},
		{"GET", "/1.0/deployments/dep1/shapes/web/revisions/9", "", 404, "revision 9"},
		{"GET", "/1.0/deployments/dep1/shapes/web/revisions/2?diff=no", "", 400, "diff"},
		{"POST", "/1.0/deployments/dep1/shapes/web/rollback", `{"revision":9}`, 404, "revision 9"},
		{"POST", "/1.0/deployments/dep1/shapes/web/rollback", `{"revision":-1}`, 400, "revision"},
		{"POST", "/1.0/deployments/dep1/shapes/web/rollback", `{"template":false}`, 400, "nothing to roll back"},
		{"POST", "/1.0/deployments/dep1/shapes/web/rollback", `{"revison":1}`, 400, "unknown field"},
		{"PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"strategy":"blue-green"}}`, 400, "rollout.strategy"},
		{"PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"max_surge":"120%"}}`, 400, "rollout.max_surge"},
		{"PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"max_surge":0,"max_unavailable":"0%"}}`, 400, "both 0"},
		{"PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"min_ready":"soon"}}`, 400, "rollout.min_ready"},
		{"PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"trigger":"always"}}`, 400, "rollout.trigger"},
		{"PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"canary":{"count":2}}}`, 400, "canary strategy"},
		{"PATCH", "/1.0/deployments/dep1", `{"config":{"activity.keep":"0"}}`, 400, "activity.keep"},
		{"GET", "/1.0/deployments/dep1/activity?since=-1", "", 400, "since"},
		{"GET", "/1.0/deployments/dep1/shapes/web/rollouts/1", "", 404, "rollout 1"},
		{"POST", "/1.0/deployments/dep1/shapes/web/rollouts/1/pause", "", 404, "rollout 1"},
		{"POST", "/1.0/deployments/dep1/shapes/web/rollouts/1/explode", "", 404, ""},
	}

	for _, tt := range tests {
		a.expect(tt.method, tt.path, tt.body, tt.status, tt.want)
	}

	// None of the refused changes made a revision.
	if n := len(a.expect("GET", "/1.0/deployments/dep1/shapes/web/revisions", "", 200, "")["metadata"].([]any)); n != 2 {
		t.Fatalf("refused changes made revisions: %d", n)
	}

	// A percentage is a string, a count a number; both round-trip.
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"max_surge":"25%","max_unavailable":1,"strategy":"canary","canary":{"count":1}}}`, 200, "")
	rollout := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)["rollout"].(map[string]any)
	if rollout["max_surge"] != "25%" || rollout["max_unavailable"] != float64(1) {
		t.Fatalf("rollout settings: %v", rollout)
	}

	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts", `{"notes":"go"}`, 202, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts", "", 409, "already has rollout 1")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts/1/resume", "", 409, "not paused")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts/1/pause", "", 200, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts/1/promote", "", 200, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts/1/abort", "", 409, "not a canary waiting")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts/1/cancel", "", 200, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts/1/cancel", "", 409, "it is over")
	r := a.expect("GET", "/1.0/deployments/dep1/shapes/web/rollouts/1", "", 200, "")["metadata"].(map[string]any)
	if r["status"] != "cancelled" || r["notes"] != "go" || r["finished_at"] == nil {
		t.Fatalf("rollout: %v", r)
	}

	activity := a.expect("GET", "/1.0/deployments/dep1/activity?shape=web", "", 200, "")["metadata"].([]any)
	var actions []string
	for _, e := range activity {
		actions = append(actions, e.(map[string]any)["action"].(string))
	}

	want := []string{"revision", "revision", "revision", "rollout-started", "rollout-paused", "rollout-promoted", "rollout-cancelled"}
	if len(actions) != len(want) {
		t.Fatalf("activity: %v, want %v", actions, want)
	}

	for i := range want {
		if actions[i] != want[i] {
			t.Fatalf("activity: %v, want %v", actions, want)
		}
	}

	// A bounded log: activity.keep drops the oldest.
	a.expect("PATCH", "/1.0/deployments/dep1", `{"config":{"activity.keep":"2"}}`, 200, "")
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"description":"x"}`, 200, "")
	if n := len(a.expect("GET", "/1.0/deployments/dep1/activity", "", 200, "")["metadata"].([]any)); n != 2 {
		t.Fatalf("activity.keep 2 kept %d", n)
	}
}

func TestRollbackOfBoundsOnly(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"scaling_maximum":7,"description":"wide"}`, 200, "")

	// Without the template, LXD is not asked (it is not there): only the bounds go back.
	result := a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollback", `{"template":false,"scaling":true,"notes":"too wide"}`, 200, "")["metadata"].(map[string]any)
	if result["revision"] != float64(3) || result["rollout"] != float64(0) {
		t.Fatalf("rollback: %v", result)
	}

	shape := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
	if shape["scaling_maximum"] != float64(3) || shape["description"] != "wide" || shape["revision"] != float64(3) {
		t.Fatalf("after rollback: %v", shape)
	}

	rev := a.expect("GET", "/1.0/deployments/dep1/shapes/web/revisions/3", "", 200, "")["metadata"].(map[string]any)
	if rev["cause"] != "rollback to 1" || rev["notes"] != "too wide" {
		t.Fatalf("rollback revision: %v", rev)
	}

	// The template needs LXD to check the image: 503 and nothing changed without it.
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollback", `{"revision":1}`, 503, "")
	if n := len(a.expect("GET", "/1.0/deployments/dep1/shapes/web/revisions", "", 200, "")["metadata"].([]any)); n != 3 {
		t.Fatalf("a refused rollback made a revision: %d", n)
	}
}

func TestIsReadyAndReplacementNames(t *testing.T) {
	now := time.Now()
	row := db.Instance{State: db.InstanceCreated, StateChangedAt: now.Add(-time.Minute)}
	running := &lxdapi.Instance{StatusCode: lxdapi.Running, LastUsedAt: now.Add(-5 * time.Second)}
	if !shapes.ReadyFor(nil, row, running, 5*time.Second, now) || shapes.ReadyFor(nil, row, running, 6*time.Second, now) {
		t.Error("min_ready counts from the last start")
	}

	if shapes.ReadyFor(nil, row, &lxdapi.Instance{StatusCode: lxdapi.Stopped}, 0, now) || shapes.ReadyFor(nil, row, nil, 0, now) {
		t.Error("a stopped or unknown instance is not ready")
	}

	creating := row
	creating.State = db.InstanceCreating
	if shapes.ReadyFor(nil, creating, running, 0, now) {
		t.Error("an instance still being created is not ready")
	}

	name := rollout.ReplacementName("web", 12)
	if !strings.HasPrefix(name, "web-r12-") || len(name) != len("web-r12-")+6 || validate.Name("instance", name) != nil {
		t.Errorf("replacement name %q", name)
	}

	long := rollout.ReplacementName(strings.Repeat("a", 63), 3)
	if len(long) != 63 || validate.Name("instance", long) != nil {
		t.Errorf("long replacement name %q (%d)", long, len(long))
	}
}
