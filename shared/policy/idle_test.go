package policy

import (
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func idleInput(current int, minimum int, rate float64, sessions int) Input {
	return Input{Kind: Metrics, Current: current, Minimum: minimum, Maximum: 5, Traffic: &api.WebhookTrafficMetrics{RequestRate: rate, Sessions: sessions}}
}

// TestIdleToZero: a shape with no request for idle_to_zero goes to zero; traffic, an open
// connection or a scale request (a wake) starts the idle time again; a minimum above 0,
// no front door figures or the setting off leave it to the other rules.
func TestIdleToZero(t *testing.T) {
	p := DefaultShape()
	p.IdleToZero = 5 * time.Minute
	s := NewState(p)
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	steps := []struct {
		at      time.Duration
		in      Input
		desired int
		why     string
	}{
		{0, idleInput(2, 0, 0, 0), 2, "cpu target tracking is off"},                              // first sight: idle starts now
		{4 * time.Minute, idleInput(2, 0, 0, 0), 2, "cpu target tracking is off"},                // not long enough
		{4*time.Minute + 30*time.Second, idleInput(2, 0, 3, 0), 2, "cpu target tracking is off"}, // a request
		{9 * time.Minute, idleInput(2, 0, 0, 0), 2, "cpu target tracking is off"},                // 4m30s since it
		{9*time.Minute + 31*time.Second, idleInput(2, 0, 0, 1), 2, "cpu target tracking is off"}, // an open connection
		{15 * time.Minute, idleInput(2, 0, 0, 0), 0, "idle to zero: no request through the front door for 5m29s"},
		{16 * time.Minute, idleInput(0, 0, 0, 0), 0, "at zero"},
	}

	for i, step := range steps {
		d := s.Decide(at(step.at), step.in)
		if d.Desired != step.desired || !strings.Contains(d.Why, step.why) {
			t.Fatalf("step %d: desired %d (%s), want %d (%q)", i, d.Desired, d.Why, step.desired, step.why)
		}
	}

	// A wake (a scale request) counts as traffic: the new instance is not taken away at
	// the next metrics.
	d := s.Decide(at(17*time.Minute), ScaleRequestInput(api.WebhookScaleRequestMetadata{Target: 1, RequestedBy: "front-door"}, 0, 0, 5))
	if d.Desired != 1 {
		t.Fatalf("wake: %+v", d)
	}

	d = s.Decide(at(18*time.Minute), idleInput(1, 0, 0, 0))
	if d.Desired != 1 {
		t.Fatalf("just woken: %+v", d)
	}

	// A minimum, no figures, or the setting off: the rule says nothing.
	for _, c := range []struct {
		name  string
		state *State
		in    Input
	}{
		{"minimum 1", s, idleInput(2, 1, 0, 0)},
		{"no front door", s, Input{Kind: Metrics, Current: 2, Maximum: 5}},
		{"off", NewState(DefaultShape()), idleInput(2, 0, 0, 0)},
	} {
		d := c.state.Decide(at(time.Hour), c.in)
		if d.Desired != 2 {
			t.Errorf("%s: %+v", c.name, d)
		}
	}
}

func TestIdleToZeroParse(t *testing.T) {
	p, err := Parse([]byte("shapes:\n  web:\n    idle_to_zero: 5m\n"))
	if err != nil || p.Shape("web").IdleToZero != 5*time.Minute || !strings.Contains(p.Shape("web").String(), "idle to zero after 5m0s") {
		t.Fatalf("%+v %v", p, err)
	}

	if _, err := Parse([]byte("shapes:\n  web:\n    idle_to_zero: 300\n")); err == nil {
		t.Fatal("a bare number was read")
	}

	if _, err := Parse([]byte("shapes:\n  web:\n    idle_to_zero: -5m\n")); err == nil || !strings.Contains(err.Error(), "idle_to_zero") {
		t.Fatalf("negative: %v", err)
	}
}
