package test

import (
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// In a cluster of three daemons on one test clock, each scheduled action fires once: on
// the holder of the schedule lease; when that member stops, another takes the lease and
// fires the next action, once too.
func TestScheduledActionsFireOnceInACluster(t *testing.T) {
	clock := newTestClock(t, time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC))
	m1, m2, m3 := threeMembers(t, "", clock.args()...)
	members := []*daemon{m1, m2, m3}
	admin := m1.Unix(t)
	must(t, admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	n := func(v int) *int { return &v }
	shape := webShape("web", 0, 2)
	shape.Schedule = []api.DeploymentShapeScheduledAction{
		{Name: "morning", Cron: "0 8 * * *", TimeZone: "Europe/Paris", ScalingMinimum: n(2), ScalingMaximum: n(6)},
		{Name: "evening", Cron: "0 20 * * *", TimeZone: "Europe/Paris", ScalingMinimum: n(0), ScalingMaximum: n(1)},
	}

	must(t, admin.CreateDeploymentShape("dep1", shape))
	waitUntil(t, "the scheduler to see the schedule", 20*time.Second, func() bool {
		s, err := admin.GetDeploymentShapeSchedule("dep1", "web")
		must(t, err)
		return s.CheckedAt != nil
	})

	fired := func(reader *daemon) []api.DeploymentActivity {
		all, err := reader.Unix(t).GetDeploymentActivity("dep1", 0, "web")
		must(t, err)
		var out []api.DeploymentActivity
		for _, e := range all {
			if e.Action == "scheduled-action" {
				out = append(out, e)
			}
		}

		return out
	}

	firedBy := func() []*daemon {
		var out []*daemon
		for _, m := range members {
			if m.cmd != nil && strings.Contains(m.Log(), "scheduled action fired") {
				out = append(out, m)
			}
		}

		return out
	}

	// Evening on the 27th (19:00 UTC), morning on the 28th (07:00 UTC), evening again.
	steps := []struct {
		now    time.Time
		action string
	}{
		{time.Date(2026, 11, 27, 19, 0, 0, 0, time.UTC), "evening"},
		{time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC), "morning"},
	}
	for i, step := range steps {
		clock.set(t, step.now)
		waitUntil(t, step.action+" fired", 20*time.Second, func() bool { return len(fired(m1)) == i+1 })
	}

	time.Sleep(time.Second) // passes of every member at 200 ms
	if got := fired(m1); len(got) != 2 || !strings.HasPrefix(got[0].Why, "evening") || !strings.HasPrefix(got[1].Why, "morning") {
		t.Fatalf("fired: %+v", got)
	}

	holders := firedBy()
	if len(holders) != 1 {
		t.Fatalf("%d members fired actions, want one", len(holders))
	}

	// The holder stops (releasing its lease): another member fires the next action, once.
	holder := holders[0]
	holder.Stop(t)
	var reader *daemon
	for _, m := range members {
		if m != holder {
			reader = m
		}
	}

	clock.set(t, time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC))
	waitUntil(t, "evening fired by another member", 30*time.Second, func() bool { return len(fired(reader)) == 3 })
	time.Sleep(time.Second)
	if got := fired(reader); len(got) != 3 || !strings.HasPrefix(got[2].Why, "evening at 2026-11-28T20:00:00+01:00") {
		t.Fatalf("fired: %+v", got)
	}

	if now := firedBy(); len(now) != 1 || now[0] == holder {
		t.Fatalf("after the holder stopped, %d running members fired (want one other)", len(now))
	}
}
