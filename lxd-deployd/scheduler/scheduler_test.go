package scheduler

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// fakeClock is the scheduler's clock in tests: it says what the test sets.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
}

func utc(y int, m time.Month, d int, h int, mi int) time.Time {
	return time.Date(y, m, d, h, mi, 0, 0, time.UTC)
}

func intp(v int) *int { return &v }

// schedShape makes deployment dep1 with shape web (bounds [1, 2]) and the schedule given.
func schedShape(t *testing.T, store *db.Cluster, actions []api.DeploymentShapeScheduledAction) (int64, int64) {
	t.Helper()
	var deploymentID, shapeID int64
	err := store.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		var err error
		deploymentID, err = db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		put := api.DeploymentShapePut{ScalingMinimum: 1, ScalingMaximum: 2, Schedule: actions, Config: map[string]string{}}
		shapeID, err = db.CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: put})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	return deploymentID, shapeID
}

func bounds(t *testing.T, store *db.Cluster, deploymentID int64) [2]int {
	t.Helper()
	var out [2]int
	err := store.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		s, err := db.GetShape(ctx, tx, deploymentID, "web")
		if err == nil {
			out = [2]int{s.ScalingMinimum, s.ScalingMaximum}
		}

		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	return out
}

func scheduledEntries(t *testing.T, store *db.Cluster, deploymentID int64) []api.DeploymentActivity {
	t.Helper()
	var out []api.DeploymentActivity
	err := store.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		all, err := db.GetActivity(ctx, tx, db.ActivityFilter{DeploymentID: deploymentID})
		for _, e := range all {
			if e.Action == "scheduled-action" {
				out = append(out, e)
			}
		}

		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	return out
}

// The scheduler with a fake clock over Europe/Paris's 2026 changes: the 02:30 action fires
// at 03:00 CEST on the spring day and once on the autumn day; a daemon down for days
// applies only the last action it missed, once; a clock that goes back fires nothing.
func TestSchedulerDSTAndMissedActions(t *testing.T) {
	ctx := context.Background()
	store := dbtest.Open(t)
	deploymentID, _ := schedShape(t, store, []api.DeploymentShapeScheduledAction{
		{Name: "early", Cron: "30 2 * * *", TimeZone: "Europe/Paris", ScalingMinimum: intp(3), ScalingMaximum: intp(5)},
		{Name: "night", Cron: "0 20 * * *", TimeZone: "Europe/Paris", ScalingMinimum: intp(0), ScalingMaximum: intp(1), Size: intp(1)},
	})

	clock := &fakeClock{}
	s := New(store, nil, clock.Now, nil)
	steps := []struct {
		name   string
		now    time.Time
		fired  string // action, or "" for none
		at     time.Time
		bounds [2]int
	}{
		{"first sight arms the schedule and fires nothing", utc(2026, 3, 28, 12, 0), "", time.Time{}, [2]int{1, 2}},
		{"night fires at 20:00 CET", utc(2026, 3, 28, 19, 0), "night", utc(2026, 3, 28, 19, 0), [2]int{0, 1}},
		{"01:59 CET: not yet", utc(2026, 3, 29, 0, 59), "", time.Time{}, [2]int{0, 1}},
		{"02:30 does not exist: fires at 03:00 CEST", utc(2026, 3, 29, 1, 0), "early", utc(2026, 3, 29, 1, 0), [2]int{3, 5}},
		{"and not again that day", utc(2026, 3, 29, 1, 45), "", time.Time{}, [2]int{3, 5}},
		{"autumn: night the day before", utc(2026, 10, 24, 18, 0), "night", utc(2026, 10, 24, 18, 0), [2]int{0, 1}},
		{"02:30 CEST, the first of two", utc(2026, 10, 25, 0, 30), "early", utc(2026, 10, 25, 0, 30), [2]int{3, 5}},
		{"an admin-like change is overridden only by the next action", utc(2026, 10, 25, 1, 0), "", time.Time{}, [2]int{3, 5}},
		{"02:30 CET, the second: nothing", utc(2026, 10, 25, 1, 30), "", time.Time{}, [2]int{3, 5}},
		{"down until two days later at 20:30: the last missed (night on the 27th), once", utc(2026, 10, 27, 19, 30), "night", utc(2026, 10, 27, 19, 0), [2]int{0, 1}},
		{"the same time again: nothing", utc(2026, 10, 27, 19, 30), "", time.Time{}, [2]int{0, 1}},
		{"the clock goes back over night: nothing fires twice", utc(2026, 10, 27, 12, 0), "", time.Time{}, [2]int{0, 1}},
	}
	count := 0
	for _, step := range steps {
		clock.Set(step.now)
		fired, err := s.pass(ctx)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}

		switch {
		case step.fired == "" && len(fired) != 0:
			t.Fatalf("%s: fired %+v, want nothing", step.name, fired)
		case step.fired != "" && (len(fired) != 1 || fired[0].Action != step.fired || !fired[0].At.Equal(step.at)):
			t.Fatalf("%s: fired %+v, want %s at %s", step.name, fired, step.fired, step.at)
		}

		if step.fired != "" {
			count++
		}

		if got := bounds(t, store, deploymentID); got != step.bounds {
			t.Fatalf("%s: bounds %v, want %v", step.name, got, step.bounds)
		}
	}

	entries := scheduledEntries(t, store, deploymentID)
	if len(entries) != count {
		t.Fatalf("%d scheduled-action entries, want %d: %+v", len(entries), count, entries)
	}

	last := entries[len(entries)-1]
	if last.Who != Who || !strings.HasPrefix(last.Why, "night at 2026-10-27T20:00:00+01:00 (0 20 * * *): scaling bounds [3, 5] -> [0, 1], size 1 asked") {
		t.Errorf("activity entry: who %q why %q", last.Who, last.Why)
	}

	// Each firing that moved the bounds recorded a revision caused by the schedule.
	err := store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		shape, err := db.GetShape(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		revs, err := db.GetRevisions(ctx, tx, shape.ID, 0)
		if err != nil {
			return err
		}

		scheduled := 0
		for _, r := range revs {
			if r.Cause == Cause && r.Requestor.Name == Who {
				scheduled++
			}
		}

		if scheduled != count {
			t.Errorf("%d revisions caused by the schedule, want %d", scheduled, count)
		}

		view, err := s.View(ctx, tx, shape.ID, 2)
		if err != nil {
			return err
		}

		if view.LastAction != "night" || len(view.Actions) != 2 || len(view.Actions[0].Next) != 2 || view.Actions[0].Next[0].Format(time.RFC3339) != "2026-10-28T02:30:00+01:00" {
			t.Errorf("view: %+v", view)
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Exactly one member fires: passes racing at the same time fire an action once (each
// shape's pass reads its place in its own transaction), and a member whose lease another
// took writes nothing.
func TestSchedulerFiresOnce(t *testing.T) {
	ctx := context.Background()
	store := dbtest.Open(t)
	deploymentID, _ := schedShape(t, store, []api.DeploymentShapeScheduledAction{
		{Name: "morning", Cron: "0 8 * * *", ScalingMinimum: intp(2), ScalingMaximum: intp(4)},
	})

	clock := &fakeClock{}
	clock.Set(utc(2026, 11, 27, 7, 0))
	members := []*Scheduler{New(store, nil, clock.Now, nil), New(store, nil, clock.Now, nil), New(store, nil, clock.Now, nil)}
	err := members[0].Pass(ctx)
	if err != nil {
		t.Fatal(err)
	}

	clock.Set(utc(2026, 11, 27, 8, 0))
	var wg sync.WaitGroup
	for _, m := range members {
		wg.Add(1)
		go func() { defer wg.Done(); _ = m.Pass(ctx) }()
	}

	wg.Wait()
	if n := len(scheduledEntries(t, store, deploymentID)); n != 1 {
		t.Fatalf("racing members fired %d times, want once", n)
	}

	// The lease: a took it, then b after it expired; a, still running, is fenced off.
	a := lease.NewManager(store, "a", 200*time.Millisecond, nil)
	b := lease.NewManager(store, "b", 200*time.Millisecond, nil)
	la, err := a.Acquire(ctx, "schedule")
	if err != nil {
		t.Fatal(err)
	}

	time.Sleep(250 * time.Millisecond)
	lb, err := b.Acquire(ctx, "schedule")
	if err != nil {
		t.Fatal(err)
	}

	clock.Set(utc(2026, 11, 28, 8, 0))
	_, err = members[0].Fenced(la).pass(ctx)
	if !errors.Is(err, lease.ErrLost) {
		t.Fatalf("a pass under a lost lease: %v, want ErrLost", err)
	}

	if n := len(scheduledEntries(t, store, deploymentID)); n != 1 {
		t.Fatalf("a member without the lease fired (%d entries)", n)
	}

	fired, err := members[1].Fenced(lb).pass(ctx)
	if err != nil || len(fired) != 1 {
		t.Fatalf("the holder's pass: %+v %v", fired, err)
	}
}
