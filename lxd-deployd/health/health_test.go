package health

import (
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestParseDefaults(t *testing.T) {
	_, ok := Parse(nil)
	if ok {
		t.Fatal("no health object, no checks")
	}

	s, ok := Parse(&api.DeploymentShapeHealth{Command: []string{"true"}, Interval: "2s"})
	if !ok || s.Interval != 2*time.Second || s.Timeout != DefaultTimeout || s.Grace != DefaultGrace ||
		s.HealthyThreshold != 1 || s.UnhealthyThreshold != 3 || s.MaxUnavailable != 1 {
		t.Fatalf("defaults: %+v", s)
	}
}

func TestNextCountsResultsInARow(t *testing.T) {
	s := Settings{Grace: 10 * time.Second, HealthyThreshold: 2, UnhealthyThreshold: 3}
	started := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	after := func(seconds int) time.Time { return started.Add(time.Duration(seconds) * time.Second) }

	steps := []struct {
		passed bool
		at     int
		status string
		streak int
	}{
		{false, 1, api.HealthStarting, 0},  // within grace: no verdict
		{true, 2, api.HealthStarting, 1},   // one pass, threshold 2
		{true, 3, api.HealthHealthy, 2},    // healthy
		{false, 4, api.HealthHealthy, 0},   // a failure within grace resets the run, no more
		{false, 11, api.HealthHealthy, -1}, // out of grace
		{false, 12, api.HealthHealthy, -2},
		{true, 13, api.HealthHealthy, 1}, // a pass breaks the run
		{false, 14, api.HealthHealthy, -1},
		{false, 15, api.HealthHealthy, -2},
		{false, 16, api.HealthUnhealthy, -3},
		{true, 17, api.HealthUnhealthy, 1},
		{true, 18, api.HealthHealthy, 2},
	}

	h := db.InstanceHealth{Status: api.HealthUnknown, Replacement: true}
	for i, step := range steps {
		h = Next(h, s, started, Result{Passed: step.passed, At: after(step.at), Output: "out"})
		if h.Status != step.status || h.Streak != step.streak {
			t.Fatalf("step %d (%+v): got %s streak %d", i, step, h.Status, h.Streak)
		}
	}

	if h.Replacement || h.CheckedAt == nil || h.Output != "out" {
		t.Fatalf("a healthy verdict ends the replacement flag and records the check: %+v", h)
	}
}

func TestParseKinds(t *testing.T) {
	cases := map[string]*api.DeploymentShapeHealth{
		api.HealthKindExec: {Command: []string{"true"}},
		api.HealthKindTTL:  {TTL: "30s"},
		api.HealthKindHTTP: {HTTP: &api.DeploymentShapeHealthHTTP{Port: 8080}},
		api.HealthKindTCP:  {TCP: &api.DeploymentShapeHealthTCP{Port: 5432}},
	}

	for kind, h := range cases {
		s, ok := Parse(h)
		if !ok || s.Kind != kind {
			t.Errorf("%s: got %+v %v", kind, s, ok)
		}
	}

	s, _ := Parse(cases[api.HealthKindTTL])
	if s.TTL != 30*time.Second || s.Interval != s.TTL {
		t.Errorf("a ttl check looks for missed reports every ttl: %+v", s)
	}

	s, _ = Parse(cases[api.HealthKindHTTP])
	if s.Path != "/" || s.Port != 8080 {
		t.Errorf("an http check's path defaults to /: %+v", s)
	}
}
