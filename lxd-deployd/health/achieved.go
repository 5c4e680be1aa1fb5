package health

import (
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// warnEvery is how often, at most, the checker warns that its checks fall behind.
const warnEvery = 5 * time.Minute

// achieved counts the checks run, by kind, since the start of a window of a minute or
// more, to say in a warning how many a second the checker achieves against what the
// shapes ask.
type achieved struct {
	since  time.Time
	counts map[string]int

	// rate is the last window's checks a second, by kind.
	rate map[string]float64

	warned time.Time
}

func (a *achieved) count(kind string) {
	if a.counts == nil {
		a.counts = map[string]int{}
	}

	a.counts[kind]++
}

// roll ends the window when it is a minute old.
func (a *achieved) roll(now time.Time) {
	if a.since.IsZero() {
		a.since = now
		return
	}

	elapsed := now.Sub(a.since)
	if elapsed < time.Minute {
		return
	}

	a.rate = map[string]float64{}
	for kind, n := range a.counts {
		a.rate[kind] = float64(n) / elapsed.Seconds()
	}

	a.since, a.counts = now, map[string]int{}
}

// overdue sets health_checks_overdue for every kind, and warns (every warnEvery at most)
// when instances wait past their interval: they are still checked in turn, each less
// often than its shape asks (c.mu held).
func (c *Checker) overdue(now time.Time) {
	c.achieved.roll(now)
	byKind := c.sched.load(now)
	for _, kind := range []string{api.HealthKindExec, api.HealthKindTTL, api.HealthKindHTTP, api.HealthKindTCP} {
		l := byKind[kind]
		if l == nil {
			c.Metrics.HealthOverdue(kind, 0)
			continue
		}

		c.Metrics.HealthOverdue(kind, l.overdue)
		if l.overdue == 0 || now.Sub(c.achieved.warned) < warnEvery || c.achieved.rate == nil {
			continue
		}

		c.achieved.warned = now
		c.Logger.Warn(overdueAdvice(kind, l, c.achieved.rate[kind], max(c.Concurrency, 1)), "kind", kind, "overdue", l.overdue, "instances", l.targets)
	}
}

// overdueAdvice says that checks of a kind fall behind and what to do about it.
func overdueAdvice(kind string, l *load, rate float64, concurrency int) string {
	advice := "choose longer intervals"
	if kind == api.HealthKindExec {
		advice = "choose longer intervals, or ttl, http or tcp checks, which cost LXD nothing per check"
	}

	return fmt.Sprintf("health checks do not keep up: %d of %d instances with %s checks wait past their interval; the shapes ask %.1f checks a second and %d at a time achieve %.1f, so each instance is checked less often than asked: %s",
		l.overdue, l.targets, kind, l.asked, concurrency, rate, advice)
}
