package test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// testClock is the file behind a daemon's --test-clock-file (tests only): the time its
// scheduler reads.
type testClock string

func newTestClock(t *testing.T, at time.Time) testClock {
	t.Helper()
	c := testClock(filepath.Join(t.TempDir(), "clock"))
	c.set(t, at)
	return c
}

func (c testClock) set(t *testing.T, at time.Time) {
	t.Helper()
	// Written aside and renamed, so the daemon never reads half a time.
	tmp := string(c) + ".tmp"
	must(t, os.WriteFile(tmp, []byte(at.UTC().Format(time.RFC3339)), 0o600))
	must(t, os.Rename(tmp, string(c)))
}

func (c testClock) args() []string { return []string{"--test-clock-file", string(c)} }

// Scheduled actions end to end, on the daemon's test clock over Europe/Paris's spring DST
// change and a daemon that was down (no LXD needed: actions set bounds and ask the
// governor, they never launch): the 02:30 action fires once at 03:00 CEST as the latest of
// the actions due, asks the governor for the raised minimum, is logged (who schedule, why
// the action) and revisioned; after a stop over two occurrences, only the latest applies,
// once, at start; a restart fires nothing again.
func TestScheduledActionsAcrossDSTAndDowntime(t *testing.T) {
	t.Parallel()
	clock := newTestClock(t, time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC))
	d := startDaemon(t, daemonOptions{ExtraArgs: clock.args()})
	admin := d.Unix(t)
	hook := newReceiver(t)
	must(t, admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}, DeploymentPut: api.DeploymentPut{
		GovernorWebhookURL: hook.server.URL + "/hook",
		Config:             map[string]string{"webhook.retry_initial_delay": "100ms", "webhook.retry_max_delay": "500ms", "webhook.metrics_interval": "0"},
	}}))
	secret, err := admin.GetWebhookSecret("dep1", false)
	must(t, err)
	hook.set(secret, 0)

	n := func(v int) *int { return &v }
	shape := webShape("web", 0, 2)
	shape.Schedule = []api.DeploymentShapeScheduledAction{
		{Name: "early", Cron: "30 2 * * *", TimeZone: "Europe/Paris", ScalingMinimum: n(3), ScalingMaximum: n(5)},
		{Name: "night", Cron: "0 20 * * *", TimeZone: "Europe/Paris", ScalingMinimum: n(0), ScalingMaximum: n(1)},
	}

	phase(t, "bad actions are 400s that name the field", func(t *testing.T) {
		bad := webShape("bad", 0, 1)
		bad.Schedule = []api.DeploymentShapeScheduledAction{{Name: "x", Cron: "0 8 * * *", TimeZone: "Mars/Olympus", ScalingMinimum: n(0), ScalingMaximum: n(1)}}
		expectCode(t, admin.CreateDeploymentShape("dep1", bad), 400, "unknown zone")
		err := admin.CreateDeploymentShape("dep1", bad)
		if err == nil || !strings.Contains(err.Error(), "schedule[0].time_zone") {
			t.Fatalf("unknown zone: %v", err)
		}
	})

	must(t, admin.CreateDeploymentShape("dep1", shape))
	schedule := func() *api.DeploymentShapeSchedule {
		s, err := admin.GetDeploymentShapeSchedule("dep1", "web")
		must(t, err)
		return s
	}

	phase(t, "armed, with next occurrences across the gap", func(t *testing.T) {
		waitUntil(t, "the scheduler to see the schedule", 20*time.Second, func() bool { return schedule().CheckedAt != nil }, withLog(d.Log))
		s := schedule()
		next := s.Actions[0].Next
		if len(next) < 2 || next[0].Format(time.RFC3339) != "2026-03-29T03:00:00+02:00" || next[1].Format(time.RFC3339) != "2026-03-30T02:30:00+02:00" {
			t.Fatalf("early's next occurrences: %v", next)
		}

		out := newCLIUser(t, d).ok("deployment", "shape", "schedule", "dep1", "web")
		if !contains(out, "early", "Europe/Paris", "[3, 5]", "2026-03-29 03:00 CEST", "No action fired yet") {
			t.Fatalf("lxd-deploy deployment shape schedule:\n%s", out)
		}
	})

	activity := func() []api.DeploymentActivity {
		all, err := admin.GetDeploymentActivity("dep1", 0, "web")
		must(t, err)
		var fired []api.DeploymentActivity
		for _, e := range all {
			if e.Action == "scheduled-action" {
				fired = append(fired, e)
			}
		}

		return fired
	}

	bounds := func(c *client.Server) [2]int {
		s, _, err := c.GetDeploymentShape("dep1", "web")
		must(t, err)
		return [2]int{s.ScalingMinimum, s.ScalingMaximum}
	}

	phase(t, "the 02:30 that does not exist fires at 03:00 CEST, once", func(t *testing.T) {
		// Past night (20:00 on the 28th) and early's 03:00: only the latest applies.
		clock.set(t, time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC))
		waitUntil(t, "bounds [3, 5]", 20*time.Second, func() bool { return bounds(admin) == [2]int{3, 5} }, withLog(d.Log))
		event := hook.waitFor("scale-request", 20*time.Second, func(e api.WebhookEvent) bool {
			return e.Type == api.WebhookScaleRequest && strings.Contains(string(e.Metadata), "early")
		})
		var request api.WebhookScaleRequestMetadata
		must(t, json.Unmarshal(event.Metadata, &request))
		if request.Target != 3 || request.RequestedBy != "schedule" {
			t.Fatalf("scale request: %+v", request)
		}

		clock.set(t, time.Date(2026, 3, 29, 1, 45, 0, 0, time.UTC))
		waitUntil(t, "the scheduler to pass 01:45", 20*time.Second, func() bool {
			c := schedule().CheckedAt
			return c != nil && c.Equal(time.Date(2026, 3, 29, 1, 45, 0, 0, time.UTC))
		})
		fired := activity()
		if len(fired) != 1 || fired[0].Who != "schedule" || !strings.HasPrefix(fired[0].Why, "early at 2026-03-29T03:00:00+02:00 (30 2 * * *): scaling bounds [0, 2] -> [3, 5]") {
			t.Fatalf("activity: %+v", fired)
		}

		revisions, err := admin.GetDeploymentShapeRevisions("dep1", "web")
		must(t, err)
		found := false
		for _, r := range revisions {
			found = found || r.Cause == "schedule" && r.Notes == "early" && r.Shape.ScalingMinimum == 3 && r.Requestor.Name == "schedule"
		}

		if !found {
			t.Fatalf("no revision caused by the schedule: %+v", revisions)
		}
	})

	phase(t, "down over two occurrences: the latest applies at start, once", func(t *testing.T) {
		d.Stop(t)
		// early (00:30 UTC on the 30th) and night (18:00 UTC on the 30th) were missed.
		clock.set(t, time.Date(2026, 3, 30, 19, 30, 0, 0, time.UTC))
		d.start(t, clock.args()...)
		admin = d.Unix(t)
		waitUntil(t, "bounds [0, 1]", 20*time.Second, func() bool { return bounds(admin) == [2]int{0, 1} }, withLog(d.Log))
		fired := activity()
		if len(fired) != 2 || !strings.HasPrefix(fired[1].Why, "night at 2026-03-30T20:00:00+02:00") {
			t.Fatalf("activity: %+v", fired)
		}

		d.Stop(t)
		d.start(t, clock.args()...)
		admin = d.Unix(t)
		waitUntil(t, "a pass after the restart", 20*time.Second, func() bool { return strings.Count(d.Log(), "the scheduler runs on a test clock") == 3 })
		time.Sleep(time.Second) // several passes at 200ms
		if fired := activity(); len(fired) != 2 {
			t.Fatalf("a restart fired again: %+v", fired)
		}

		s := schedule()
		if s.LastAction != "night" || s.LastAt == nil || !s.LastAt.Equal(time.Date(2026, 3, 30, 18, 0, 0, 0, time.UTC)) {
			t.Fatalf("schedule: %+v", s)
		}
	})

	phase(t, "an admin's edit of the bounds lasts until the next action", func(t *testing.T) {
		s, etag, err := admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		s.ScalingMaximum = 7
		must(t, admin.UpdateDeploymentShape("dep1", "web", s.Writable(), etag))
		clock.set(t, time.Date(2026, 3, 31, 0, 30, 0, 0, time.UTC)) // early, 02:30 CEST
		waitUntil(t, "early overrides the edit", 20*time.Second, func() bool { return bounds(admin) == [2]int{3, 5} }, withLog(d.Log))
	})

	phase(t, "an action with a size asks the governor for it", func(t *testing.T) {
		s, etag, err := admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		put := s.Writable()
		put.Schedule = append(put.Schedule, api.DeploymentShapeScheduledAction{Name: "peak", Cron: "0 12 * * *", TimeZone: "Europe/Paris", ScalingMinimum: n(1), ScalingMaximum: n(8), Size: n(6)})
		must(t, admin.UpdateDeploymentShape("dep1", "web", put, etag))
		clock.set(t, time.Date(2026, 3, 31, 10, 0, 0, 0, time.UTC)) // 12:00 CEST
		waitUntil(t, "peak's bounds", 20*time.Second, func() bool { return bounds(admin) == [2]int{1, 8} }, withLog(d.Log))
		event := hook.waitFor("scale-request", 20*time.Second, func(e api.WebhookEvent) bool {
			return e.Type == api.WebhookScaleRequest && strings.Contains(string(e.Metadata), "peak")
		})
		var request api.WebhookScaleRequestMetadata
		must(t, json.Unmarshal(event.Metadata, &request))
		if request.Target != 6 || request.RequestedBy != "schedule" {
			t.Fatalf("scale request: %+v", request)
		}
	})
}
