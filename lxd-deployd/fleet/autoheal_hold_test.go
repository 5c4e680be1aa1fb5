package fleet

import (
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestPlanHolds: autohealing holds when many instances fail at once, when the check is
// broken, on a member whose every instance is unhealthy and past the replacement limit;
// one failing instance of a healthy shape is still replaced, and neither a crash's
// unfinished replacement nor a lost member's instances are ever held.
func TestPlanHolds(t *testing.T) {
	now := time.Now()
	replace := func(mod func(h *api.DeploymentShapeHealth)) *api.DeploymentShapeHealth {
		h := &api.DeploymentShapeHealth{Command: []string{"true"}, Replace: true}
		if mod != nil {
			mod(h)
		}

		return h
	}

	shape := func(id int64, h *api.DeploymentShapeHealth, check string) db.Shape {
		s := db.Shape{ID: id, HealthCheck: check}
		s.Name, s.Health = "s", h
		return s
	}

	unhealthy := func(id int64, shapeID int64, location string) db.Instance {
		r := db.Instance{ID: id, ShapeID: shapeID, Name: "i", State: db.InstanceCreated, Location: location}
		r.Health.Status = api.HealthUnhealthy
		return r
	}

	cases := []struct {
		name    string
		shape   db.Shape
		counts  map[string]db.LocationHealth
		rows    []db.Instance
		starts  int
		step    HealStep
		held    string // a word of the reason, "" when not held
		members bool
	}{
		{name: "one of four unhealthy", shape: shape(1, replace(nil), api.HealthCheckOK), counts: map[string]db.LocationHealth{"": {Created: 4, Unhealthy: 1}},
			rows: []db.Instance{unhealthy(10, 1, "")}},
		{name: "two of four unhealthy: not more than half", shape: shape(1, replace(nil), api.HealthCheckOK), counts: map[string]db.LocationHealth{"": {Created: 4, Unhealthy: 2}},
			rows: []db.Instance{unhealthy(10, 1, ""), unhealthy(11, 1, "")}},
		{name: "three of four unhealthy", shape: shape(1, replace(nil), api.HealthCheckOK), counts: map[string]db.LocationHealth{"": {Created: 4, Unhealthy: 3}},
			rows: []db.Instance{unhealthy(10, 1, "")}, held: "3 of 4 instances"},
		{name: "the only instance unhealthy", shape: shape(1, replace(nil), api.HealthCheckOK), counts: map[string]db.LocationHealth{"": {Created: 1, Unhealthy: 1}},
			rows: []db.Instance{unhealthy(10, 1, "")}},
		{name: "missing count as failing", shape: shape(1, replace(nil), api.HealthCheckOK), counts: map[string]db.LocationHealth{"": {Created: 2, Unhealthy: 1}},
			rows: []db.Instance{unhealthy(10, 1, ""), {ID: 11, ShapeID: 1, State: db.InstanceMissing}}, held: "2 of 3 instances"},
		{name: "hold_share 1 never holds", shape: shape(1, replace(func(h *api.DeploymentShapeHealth) { h.HoldShare = 1 }), api.HealthCheckOK), counts: map[string]db.LocationHealth{"": {Created: 4, Unhealthy: 4}},
			rows: []db.Instance{unhealthy(10, 1, "")}},
		{name: "a broken check", shape: func() db.Shape {
			s := shape(1, replace(nil), api.HealthCheckBroken)
			s.HealthCheckReason = "exit code 127"
			return s
		}(), counts: map[string]db.LocationHealth{"": {Created: 4, Unhealthy: 1}}, rows: []db.Instance{unhealthy(10, 1, "")}, held: "broken: exit code 127"},
		{name: "could not start, check not known to start", shape: shape(1, replace(nil), ""), counts: map[string]db.LocationHealth{"": {Created: 4, Unhealthy: 1}},
			rows: []db.Instance{func() db.Instance { r := unhealthy(10, 1, ""); r.Health.CannotStart = true; return r }()}, held: "could not start"},
		{name: "could not start, the check starts elsewhere", shape: shape(1, replace(nil), api.HealthCheckOK), counts: map[string]db.LocationHealth{"": {Created: 4, Unhealthy: 1}},
			rows: []db.Instance{func() db.Instance { r := unhealthy(10, 1, ""); r.Health.CannotStart = true; return r }()}},
		{name: "every instance on a member unhealthy", shape: shape(1, replace(nil), api.HealthCheckOK), counts: map[string]db.LocationHealth{"m1": {Created: 2, Unhealthy: 2}, "m2": {Created: 4}, "m3": {Created: 4}},
			rows: []db.Instance{unhealthy(10, 1, "m1")}, held: "member m1", members: true},
		{name: "replacement limit reached", shape: shape(1, replace(func(h *api.DeploymentShapeHealth) { h.ReplacementLimit = 2 }), api.HealthCheckOK), counts: map[string]db.LocationHealth{"": {Created: 10, Unhealthy: 1}},
			rows: []db.Instance{unhealthy(10, 1, "")}, starts: 2, held: "health.replacement_limit 2"},
		{name: "a crash's replacement is finished anyway", shape: shape(1, replace(nil), api.HealthCheckOK), counts: map[string]db.LocationHealth{"": {Created: 4, Unhealthy: 4}},
			rows: []db.Instance{unhealthy(10, 1, "")}, step: HealStep{Finish: true}},
		{name: "a lost member's instance is replaced anyway", shape: shape(1, replace(nil), api.HealthCheckOK), counts: map[string]db.LocationHealth{"m1": {Created: 2, Unhealthy: 2}},
			rows: []db.Instance{unhealthy(10, 1, "m1")}, step: HealStep{Unreachable: true}, members: true},
	}

	for _, tc := range cases {
		started := map[int64][]time.Time{}
		for range tc.starts {
			started[1] = append(started[1], now.Add(-time.Minute))
		}

		holds := PlanHolds([]db.Shape{tc.shape}, map[int64]map[string]db.LocationHealth{1: tc.counts}, tc.rows, started, now)
		step := tc.step
		step.Shape, step.Row = tc.shape, tc.rows[0]
		got := holds.Held(step)
		switch {
		case tc.held == "" && got != "":
			t.Errorf("%s: held (%s), want replaced", tc.name, got)
		case tc.held != "" && !strings.Contains(got, tc.held):
			t.Errorf("%s: held %q, want a reason with %q", tc.name, got, tc.held)
		}

		if tc.members != (len(holds.Members) > 0) {
			t.Errorf("%s: member holds %v", tc.name, holds.Members)
		}

		if tc.held != "" && holds.ShapeReason(1, []HealStep{step}) == "" {
			t.Errorf("%s: the shape's health_status must say why", tc.name)
		}
	}
}

// TestRecentStarts counts only the starts within the window.
func TestRecentStarts(t *testing.T) {
	now := time.Now()
	starts := []time.Time{now.Add(-11 * time.Minute), now.Add(-9 * time.Minute), now.Add(-time.Second)}
	if n := recentStarts(starts, now, 10*time.Minute); n != 2 {
		t.Fatalf("%d starts in the last 10 minutes, want 2", n)
	}
}

// TestSettleAfterHold: once a hold lifts, a verdict's replacement waits one verdict's time
// (the last instances of a shared fault recover a check or two later); a lost member's
// instance and a crash's replacement do not wait, and the wait ends.
func TestSettleAfterHold(t *testing.T) {
	h := &Autohealer{settle: map[int64]time.Time{}}
	shape := db.Shape{ID: 1}
	shape.Health = &api.DeploymentShapeHealth{Command: []string{"true"}, Interval: "1s", Timeout: "3s", UnhealthyThreshold: 2, Replace: true}
	now := time.Now()
	h.settleAfterHold(shape, now)
	unhealthy := db.Instance{ID: 10, ShapeID: 1, State: db.InstanceCreated}
	unhealthy.Health.Status = api.HealthUnhealthy
	if until, ok := h.settling(HealStep{Shape: shape, Row: unhealthy}, now.Add(time.Second)); !ok || until.Sub(now) != 12*time.Second {
		t.Fatalf("a verdict's replacement right after a hold: settling %v until %v, want 12 s", ok, until.Sub(now))
	}

	if _, ok := h.settling(HealStep{Shape: shape, Row: unhealthy, Unreachable: true}, now.Add(time.Second)); ok {
		t.Fatal("a lost member's instance must not wait")
	}

	if _, ok := h.settling(HealStep{Shape: shape, Row: unhealthy, Finish: true}, now.Add(time.Second)); ok {
		t.Fatal("a crash's replacement must be finished at once")
	}

	if _, ok := h.settling(HealStep{Shape: shape, Row: unhealthy}, now.Add(13*time.Second)); ok {
		t.Fatal("the wait must end")
	}
}

// TestCorrelationWindow: an instance seen unhealthy is replaced for it only once it has
// been seen so for one interval and one timeout (others sharing its fault then show it
// and a hold weighs them all); one that recovers is forgotten.
func TestCorrelationWindow(t *testing.T) {
	h := &Autohealer{unhealthySince: map[int64]time.Time{}}
	shape := db.Shape{ID: 1}
	shape.Health = &api.DeploymentShapeHealth{Command: []string{"true"}, Interval: "1s", Timeout: "3s", Replace: true}
	sick := db.Instance{ID: 10, ShapeID: 1, State: db.InstanceCreated}
	sick.Health.Status = api.HealthUnhealthy
	now := time.Now()
	h.noteUnhealthy([]db.Instance{sick}, now)
	h.noteUnhealthy([]db.Instance{sick}, now.Add(time.Second)) // seen again: the first time stays
	if left, waiting := h.correlating(HealStep{Shape: shape, Row: sick}, now.Add(time.Second)); !waiting || left != 3*time.Second {
		t.Fatalf("1 s after it was first seen unhealthy: waiting %v, %v left, want 3 s", waiting, left)
	}

	if _, waiting := h.correlating(HealStep{Shape: shape, Row: sick}, now.Add(4*time.Second)); waiting {
		t.Fatal("past its window it is replaced")
	}

	if _, waiting := h.correlating(HealStep{Shape: shape, Row: sick, Unreachable: true}, now); waiting {
		t.Fatal("a lost member's instance does not wait")
	}

	h.noteUnhealthy(nil, now.Add(5*time.Second))
	if len(h.unhealthySince) != 0 {
		t.Fatalf("a recovered instance must be forgotten: %v", h.unhealthySince)
	}
}

// TestPlanHoldsCountsFailing: instances failing their checks, not unhealthy yet, count
// toward the share: a shared fault shows on them a check later.
func TestPlanHoldsCountsFailing(t *testing.T) {
	s := db.Shape{ID: 1, HealthCheck: api.HealthCheckOK}
	s.Health = &api.DeploymentShapeHealth{Command: []string{"true"}, Replace: true}
	sick := db.Instance{ID: 10, ShapeID: 1, State: db.InstanceCreated}
	sick.Health.Status = api.HealthUnhealthy
	holds := PlanHolds([]db.Shape{s}, map[int64]map[string]db.LocationHealth{1: {"": {Created: 4, Unhealthy: 1, Failing: 2}}}, []db.Instance{sick}, nil, time.Now())
	if reason := holds.Held(HealStep{Shape: s, Row: sick}); !strings.Contains(reason, "3 of 4 instances") {
		t.Fatalf("1 unhealthy and 2 failing of 4: %q, want held", reason)
	}
}
