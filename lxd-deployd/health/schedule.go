package health

import (
	"container/heap"
	"math/rand/v2"
	"time"
)

// schedule is when each listed instance is next due for its check, and which checks are
// running. The checker's workers take from it as soon as a slot frees, the longest
// overdue first: when LXD cannot keep up, every instance still has its turn, and the
// instances overdue say by how much the checks fall behind.
type schedule struct {
	targets []target
	index   map[int64]int       // instance row id -> its place in targets
	due     map[int64]time.Time // instance row id -> next check
	running map[int64]bool

	// queue orders the due times, the soonest first, so that a take does not scan every
	// target (1,000 of them, a hundred times a second). An entry whose time is no longer
	// the instance's due time, or whose instance runs or is forgotten, is stale and skipped.
	queue dueQueue
}

func newSchedule() *schedule {
	return &schedule{index: map[int64]int{}, due: map[int64]time.Time{}, running: map[int64]bool{}}
}

// set replaces the targets with those listed: a new one's first check lands anywhere in
// its first interval, so that instances listed together are not checked together; the
// schedule of instances no longer listed is forgotten.
func (s *schedule) set(targets []target, now time.Time) {
	s.targets = targets
	s.index = make(map[int64]int, len(targets))
	for i, t := range targets {
		id := t.row.ID
		s.index[id] = i
		_, scheduled := s.due[id]
		if !scheduled {
			s.setDue(id, now.Add(time.Duration(rand.Int64N(int64(t.settings.Interval)))))
		}
	}

	for id := range s.due {
		_, listed := s.index[id]
		if !listed && !s.running[id] {
			delete(s.due, id)
		}
	}
}

// setDue schedules an instance's next check.
func (s *schedule) setDue(id int64, at time.Time) {
	s.due[id] = at
	if !s.running[id] {
		heap.Push(&s.queue, dueEntry{id: id, at: at})
	}
}

// take marks the longest overdue target that is not running as running and returns it;
// when none is due, ok is false and wait is how long until the next one is (0: none
// scheduled).
func (s *schedule) take(now time.Time) (t target, wait time.Duration, ok bool) {
	for s.queue.Len() > 0 {
		next := s.queue[0]
		due, scheduled := s.due[next.id]
		_, listed := s.index[next.id]
		if !scheduled || !listed || s.running[next.id] || !due.Equal(next.at) {
			heap.Pop(&s.queue) // stale
			continue
		}

		if next.at.After(now) {
			return target{}, next.at.Sub(now), false
		}

		heap.Pop(&s.queue)
		s.running[next.id] = true
		return s.targets[s.index[next.id]], 0, true
	}

	return target{}, 0, false
}

// done ends a target's check and schedules its next one interval later, +-10%: the
// jitter keeps instances that started together from staying in step.
func (s *schedule) done(t target, now time.Time) {
	delete(s.running, t.row.ID)
	if _, listed := s.index[t.row.ID]; !listed {
		delete(s.due, t.row.ID) // no longer listed: forgotten (a new listing schedules it anew)
		return
	}

	interval := t.settings.Interval
	jitter := time.Duration(rand.Int64N(int64(interval)/5+1)) - interval/10
	s.setDue(t.row.ID, now.Add(interval+jitter))
}

// dueEntry is an instance's due time in the queue.
type dueEntry struct {
	id int64
	at time.Time
}

// dueQueue is a min-heap of due times (container/heap).
type dueQueue []dueEntry

func (q dueQueue) Len() int           { return len(q) }
func (q dueQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q dueQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *dueQueue) Push(x any)        { *q = append(*q, x.(dueEntry)) }
func (q *dueQueue) Pop() any {
	old := *q
	last := old[len(old)-1]
	*q = old[:len(old)-1]
	return last
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
