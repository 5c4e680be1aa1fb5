package health

import (
	"math/rand/v2"
	"time"
)

// schedule is when each listed instance is next due for its check, and which checks are
// running. The checker's workers take from it as soon as a slot frees, the longest
// overdue first: when LXD cannot keep up, every instance still has its turn, and the
// instances overdue say by how much the checks fall behind.
type schedule struct {
	targets []target
	due     map[int64]time.Time // instance row id -> next check
	running map[int64]bool
}

func newSchedule() *schedule {
	return &schedule{due: map[int64]time.Time{}, running: map[int64]bool{}}
}

// set replaces the targets with those listed: a new one's first check lands anywhere in
// its first interval, so that instances listed together are not checked together; the
// schedule of instances no longer listed is forgotten.
func (s *schedule) set(targets []target, now time.Time) {
	s.targets = targets
	seen := make(map[int64]bool, len(targets))
	for _, t := range targets {
		id := t.row.ID
		seen[id] = true
		_, scheduled := s.due[id]
		if !scheduled {
			s.due[id] = now.Add(time.Duration(rand.Int64N(int64(t.settings.Interval))))
		}
	}

	for id := range s.due {
		if !seen[id] && !s.running[id] {
			delete(s.due, id)
		}
	}
}

// take marks the longest overdue target that is not running as running and returns it;
// when none is due, ok is false and wait is how long until the next one is (0: none
// scheduled).
func (s *schedule) take(now time.Time) (t target, wait time.Duration, ok bool) {
	best := -1
	var bestDue, nextDue time.Time
	for i, candidate := range s.targets {
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
			best, bestDue = i, due
		}
	}

	if best < 0 {
		if nextDue.IsZero() {
			return target{}, 0, false
		}

		return target{}, nextDue.Sub(now), false
	}

	t = s.targets[best]
	s.running[t.row.ID] = true
	return t, 0, true
}

// done ends a target's check and schedules its next one interval later, +-10%: the
// jitter keeps instances that started together from staying in step.
func (s *schedule) done(t target, now time.Time) {
	delete(s.running, t.row.ID)
	if _, listed := s.due[t.row.ID]; !listed {
		return // no longer listed: forgotten
	}

	interval := t.settings.Interval
	jitter := time.Duration(rand.Int64N(int64(interval)/5+1)) - interval/10
	s.due[t.row.ID] = now.Add(interval + jitter)
}

// load is, by check kind, the checks a second the targets ask for, how many targets
// there are, and how many are overdue: waiting for their check past its due time by more
// than a fifth of the interval plus a second (the jitter and a tick), which a checker
// that keeps up never is.
type load struct {
	asked   float64
	targets int
	overdue int
}

func (s *schedule) load(now time.Time) map[string]*load {
	byKind := map[string]*load{}
	for _, t := range s.targets {
		l := byKind[t.settings.Kind]
		if l == nil {
			l = &load{}
			byKind[t.settings.Kind] = l
		}

		l.targets++
		l.asked += 1 / t.settings.Interval.Seconds()
		if !s.running[t.row.ID] && now.Sub(s.due[t.row.ID]) > overdueAfter(t.settings.Interval) {
			l.overdue++
		}
	}

	return byKind
}

// overdueAfter is how late a check of that interval is overdue.
func overdueAfter(interval time.Duration) time.Duration {
	return interval/5 + time.Second
}
