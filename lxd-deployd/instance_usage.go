package main

import (
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// lxdMetricsLifetime is how long LXD 5.0 keeps its /1.0/metrics answer before it reads
// the instances again (8 s; later releases keep it 15 s, so 8 is the safe bound).
const lxdMetricsLifetime = 8 * time.Second

// usageGrace is how much longer than LXD's instance listing (which took listing) a listing
// of a shape waits for LXD's metrics when it has no recent answer: a fifth of it, at least
// usageGraceFloor, so that the listing stays within 1.2 times LXD's own. LXD reads its
// metrics again for every instance of the project once its cache has expired: with 200-400
// instances on a loaded machine that took it 20-30 s, and with 1,000 instances on a loaded
// machine no answer came within a minute, so a fixed grace of 5 s made every listing 5 s
// longer than LXD's (2.9 times it). A listing that does not get them in time goes without
// usage, as when LXD does not answer; the fetch goes on, and the listings after it share
// its answer while it is fresh.
func usageGrace(listing time.Duration) time.Duration {
	return max(usageGraceFloor, listing/5)
}

const usageGraceFloor = 250 * time.Millisecond

// usageCache shares LXD's /1.0/metrics answer among listings, per project, with one fetch
// in flight. With 1,000 instances the answer is megabytes, and fetching and reading it for
// every listing of a shape made the listing slower than LXD's own (issue 20). It adds no
// staleness: an answer is reused only while LXD itself would still give it, that is until
// LXD's lifetime has passed since the answer was made. When LXD made it is not said, but it
// was after the last fetch that still got the previous answer began: an answer is reused
// until that moment plus the lifetime, and not at all before a change was seen.
type usageCache struct {
	mu       sync.Mutex
	projects map[string]*projectUsage
	now      func() time.Time

	// fetched hears of each fetch, for the metrics (lxd_calls_total{kind="metrics"}).
	fetched func(took time.Duration, ok bool)

	// watched is when each project was last listed: run keeps their usage fresh.
	watched map[string]time.Time
}

// metricsSource is where usage comes from: LXD's /1.0/metrics of a project
// (backend.LXD.Metrics, or a fake in tests).
type metricsSource interface {
	Metrics(project string) (string, error)
}

// projectUsage is the last answer for one project.
type projectUsage struct {
	usage map[string]api.DeploymentInstanceUsage

	// freshUntil is when LXD may have made a newer answer (zero: unknown, not reused).
	freshUntil time.Time

	// lastFetch is when the fetch that got usage began.
	lastFetch time.Time

	// fetching is closed when the fetch in flight ends (nil: none).
	fetching chan struct{}
}

func newUsageCache(fetched func(took time.Duration, ok bool)) *usageCache {
	if fetched == nil {
		fetched = func(time.Duration, bool) {}
	}

	return &usageCache{projects: map[string]*projectUsage{}, now: time.Now, fetched: fetched, watched: map[string]time.Time{}}
}

// usageAnswer is LXD's usage of a project's running instances by name, and when the
// fetch that got it began.
type usageAnswer struct {
	usage map[string]api.DeploymentInstanceUsage
	at    time.Time
}

// usageMaxAge is how old an answer a listing takes rather than wait for LXD to read its
// metrics again: at 1,000 instances with exec checks running, LXD took longer than the
// grace for every read, and every listing waited the whole grace (5.5 s against LXD's own
// listing's 0.48 s). An answer shown says when it was fetched (usage.sampled_at).
const usageMaxAge = time.Minute

// last is the project's last answer if it is younger than usageMaxAge (zero otherwise).
func (c *usageCache) last(project string) usageAnswer {
	if c == nil {
		return usageAnswer{}
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.projects[project]
	if p == nil || p.usage == nil || c.now().Sub(p.lastFetch) >= usageMaxAge {
		return usageAnswer{}
	}

	return usageAnswer{usage: p.usage, at: p.lastFetch}
}

// fetching says whether a fetch of the project's usage is in flight: a listing that
// starts meanwhile does not wait for it (an earlier listing already did), and shows the
// last answer if any.
func (c *usageCache) fetching(project string) bool {
	if c == nil {
		return false
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.projects[project]
	return p != nil && p.fetching != nil
}

// get returns the usage of a project's running instances by name: LXD's answer while it
// is fresh, else a new one (a listing that comes while one is fetched waits for it).
// Usage is a nicety of the listing: when LXD does not answer, there is none.
func (c *usageCache) get(client metricsSource, project string) usageAnswer {
	if c == nil {
		started := time.Now()
		usage, _ := instanceUsage(client, project)
		return usageAnswer{usage: usage, at: started}
	}

	c.mu.Lock()
	p := c.projects[project]
	if p == nil {
		p = &projectUsage{}
		c.projects[project] = p
	}

	if c.now().Before(p.freshUntil) {
		defer c.mu.Unlock()
		return usageAnswer{usage: p.usage, at: p.lastFetch}
	}

	if p.fetching != nil {
		wait := p.fetching
		c.mu.Unlock()
		<-wait
		c.mu.Lock()
		defer c.mu.Unlock()
		return usageAnswer{usage: p.usage, at: p.lastFetch}
	}

	done := make(chan struct{})
	p.fetching = done
	c.mu.Unlock()

	started := c.now()
	usage, ok := instanceUsage(client, project)
	c.fetched(c.now().Sub(started), ok)

	c.mu.Lock()
	defer c.mu.Unlock()
	defer close(done)
	p.fetching = nil
	if !ok {
		p.usage, p.freshUntil, p.lastFetch = nil, time.Time{}, time.Time{}
		return usageAnswer{}
	}

	if !p.lastFetch.IsZero() && !sameUsage(p.usage, usage) {
		// LXD made this answer after the last fetch that got the previous one began.
		p.freshUntil = p.lastFetch.Add(lxdMetricsLifetime)
	}

	p.usage, p.lastFetch = usage, started
	return usageAnswer{usage: usage, at: started}
}

// forListing is the usage a listing shows, once it has LXD's statuses: the answer fetched
// meanwhile if it has come; else the last answer if young enough (the fetch goes on, and
// later listings share it); else the fetch's answer within grace (usageGrace); else none.
func (c *usageCache) forListing(project string, fetched <-chan usageAnswer, grace time.Duration) usageAnswer {
	select {
	case answer := <-fetched:
		return answer
	default:
	}

	last := c.last(project)
	if last.usage != nil {
		return last
	}

	select {
	case answer := <-fetched:
		return answer
	case <-time.After(grace):
		return usageAnswer{}
	}
}

// sameUsage says whether two answers are alike: LXD's next answer moves every running
// instance's CPU time, so an answer alike is LXD's cached one (or one that says the same).
func sameUsage(a map[string]api.DeploymentInstanceUsage, b map[string]api.DeploymentInstanceUsage) bool {
	return maps.Equal(a, b)
}

// instanceUsage reads the CPU and memory use of a project's running instances from one
// LXD /1.0/metrics call (LXD caches it for a few seconds and answers in milliseconds, where
// recursion=2 state reads take hundreds), by instance name.
func instanceUsage(client metricsSource, project string) (map[string]api.DeploymentInstanceUsage, bool) {
	text, err := client.Metrics(project)
	if err != nil {
		return nil, false
	}

	samples, err := webhooks.ParseLXDMetrics(text)
	if err != nil {
		return nil, false
	}

	out := make(map[string]api.DeploymentInstanceUsage, len(samples))
	for key, s := range samples {
		sampleProject, name, ok := strings.Cut(key, "/")
		if !ok || sampleProject != project {
			continue
		}

		out[name] = api.DeploymentInstanceUsage{CPUSeconds: s.CPUSeconds, MemoryUsageBytes: s.MemoryUsed, MemoryLimitBytes: s.MemoryTotal}
	}

	return out, true
}
