package health

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func scheduleTargets(n int, interval time.Duration) []target {
	var targets []target
	for i := 1; i <= n; i++ {
		targets = append(targets, target{row: db.Instance{ID: int64(i)}, settings: Settings{Kind: api.HealthKindExec, Interval: interval}})
	}

	return targets
}

// TestScheduleTakesLongestOverdueFirst: when the slots cannot keep up, the instance that
// waited longest goes next, never one being checked, and a check's end schedules the
// next one an interval later.
func TestScheduleTakesLongestOverdueFirst(t *testing.T) {
	now := time.Now()
	s := newSchedule()
	s.set(scheduleTargets(3, 10*time.Second), now)
	for _, first := range s.due {
		if first.Before(now) || !first.Before(now.Add(10*time.Second)) {
			t.Fatalf("a first check due at %v, want within the first interval from %v", first, now)
		}
	}

	s.setDue(1, now.Add(-time.Second))
	s.setDue(2, now.Add(-3*time.Second))
	s.setDue(3, now.Add(time.Second))
	order := []int64{}
	for {
		next, wait, ok := s.take(now)
		if !ok {
			if wait != time.Second {
				t.Fatalf("wait %v until the next due check, want 1s", wait)
			}

			break
		}

		order = append(order, next.row.ID)
	}

	if len(order) != 2 || order[0] != 2 || order[1] != 1 {
		t.Fatalf("took %v, want [2 1]: the longest overdue first, none twice", order)
	}

	s.done(target{row: db.Instance{ID: 2}, settings: Settings{Interval: 10 * time.Second}}, now)
	if d := s.due[2].Sub(now); d < 9*time.Second || d > 11*time.Second {
		t.Fatalf("next check of 2 in %v, want 10s +-10%%", d)
	}

	if s.running[2] || !s.running[1] {
		t.Fatalf("running %v, want 1 only", s.running)
	}
}

// TestScheduleForgetsUnlisted drops the schedule of an instance no longer listed, unless
// its check is running (its end then finds nothing to reschedule).
func TestScheduleForgetsUnlisted(t *testing.T) {
	now := time.Now()
	s := newSchedule()
	s.set(scheduleTargets(3, time.Second), now)
	s.running[3] = true
	s.set(scheduleTargets(1, time.Second), now)
	if _, ok := s.due[2]; ok {
		t.Fatal("instance 2 is no longer listed and still scheduled")
	}

	if _, ok := s.due[3]; !ok {
		t.Fatal("instance 3's running check lost its entry")
	}

	s.done(target{row: db.Instance{ID: 3}, settings: Settings{Interval: time.Second}}, now)
	s.set(scheduleTargets(1, time.Second), now)
	if _, ok := s.due[3]; ok || len(s.running) != 0 {
		t.Fatalf("instance 3 still scheduled (%v) or running (%v)", s.due, s.running)
	}
}

// TestScheduleLoadCountsOverdue counts as overdue the instances waiting past their due
// time by more than a fifth of the interval and a second, not those being checked, and
// sums what is asked.
func TestScheduleLoadCountsOverdue(t *testing.T) {
	now := time.Now()
	s := newSchedule()
	s.set(scheduleTargets(4, 10*time.Second), now)
	s.due[1] = now.Add(-3100 * time.Millisecond) // overdue
	s.due[2] = now.Add(-2900 * time.Millisecond) // late, within the jitter and a tick
	s.due[3] = now.Add(-20 * time.Second)
	s.running[3] = true // being checked
	s.due[4] = now.Add(time.Second)
	l := s.load(now)[api.HealthKindExec]
	if l.overdue != 1 || l.targets != 4 || l.asked < 0.39 || l.asked > 0.41 {
		t.Fatalf("load %+v, want 1 overdue of 4, 0.4 checks a second asked", *l)
	}

	advice := overdueAdvice(api.HealthKindExec, l, 0.2, 16)
	for _, want := range []string{"1 of 4", "0.4 checks a second", "achieve 0.2", "ttl, http or tcp"} {
		if !strings.Contains(advice, want) {
			t.Errorf("advice %q does not say %q", advice, want)
		}
	}
}

// TestScheduleQueueAsScan drives the schedule through random lists, takes and ends of
// checks, and holds every take to a scan of all targets for the longest overdue one not
// running (what take did before it kept a queue).
func TestScheduleQueueAsScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 24))
	now := time.Now()
	s := newSchedule()
	var running []target
	for step := 0; step < 20000; step++ {
		now = now.Add(time.Duration(rng.IntN(50)) * time.Millisecond)
		switch op := rng.IntN(10); {
		case op == 0:
			// A new listing: some instances gone, some new, ids up to 60.
			var listed []target
			for id := int64(1); id <= 60; id++ {
				if rng.IntN(3) > 0 {
					listed = append(listed, target{row: db.Instance{ID: id}, settings: Settings{Kind: api.HealthKindExec, Interval: time.Duration(1+rng.IntN(5)) * time.Second}})
				}
			}

			s.set(listed, now)
		case op < 4 && len(running) > 0:
			i := rng.IntN(len(running))
			s.done(running[i], now)
			running = append(running[:i], running[i+1:]...)
		default:
			want, wantWait := scanTake(s, now)
			got, wait, ok := s.take(now)
			if ok != (want >= 0) || (ok && got.row.ID != want) || (!ok && wait != wantWait) {
				t.Fatalf("step %d: took %d (ok %v, wait %v), a scan takes %d (wait %v)", step, got.row.ID, ok, wait, want, wantWait)
			}

			if ok {
				running = append(running, got)
			}
		}
	}
}

// scanTake is the id the longest overdue listed target not running (-1: none due) and the
// wait until the next due one.
func scanTake(s *schedule, now time.Time) (int64, time.Duration) {
	best := int64(-1)
	var bestDue, nextDue time.Time
	for _, candidate := range s.targets {
		id := candidate.row.ID
		if s.running[id] {
			continue
		}

		due := s.due[id]
		if due.After(now) {
			if nextDue.IsZero() || due.Before(nextDue) {
				nextDue = due
			}

			continue
		}

		if best < 0 || due.Before(bestDue) {
			best, bestDue = id, due
		}
	}

	if best >= 0 || nextDue.IsZero() {
		return best, 0
	}

	return -1, nextDue.Sub(now)
}
