// Package observed keeps the daemon's one observed snapshot of LXD (issue 34): the usage of
// each project's running instances, read from LXD's /1.0/metrics in the background and on
// demand with one read in flight, and each project's instances with their state (address,
// status), listed at most once per the age its readers accept. Readers (the shape listing, the governor's metrics events, the health checker) ask
// the snapshot instead of LXD, and every answer says when it was read.
//
// What the snapshot says is observation, never a verdict on an instance (issue 31): when
// LXD does not answer, a reader gets an error or no usage, never "no instances", and
// nothing that refuses, replaces or deletes decides from it: those read LXD again.
package observed

import (
	"errors"
	"maps"
	"strings"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// LXDMetricsLifetime is how long LXD 5.0 keeps its /1.0/metrics answer before it reads
// the instances again (8 s; later releases keep it 15 s, so 8 is the safe bound).
const LXDMetricsLifetime = 8 * time.Second

// Grace is how much longer than LXD's instance listing (which took listing) a listing of a
// shape waits for LXD's metrics when it has no recent answer: a fifth of it, at least
// graceFloor, so that the listing stays within 1.2 times LXD's own. LXD reads its metrics
// again for every instance of the project once its cache has expired: with 200-400
// instances on a loaded machine that took it 20-30 s, and with 1,000 instances on a loaded
// machine no answer came within a minute, so a fixed grace of 5 s made every listing 5 s
// longer than LXD's (2.9 times it). A listing that does not get them in time goes without
// usage, as when LXD does not answer; the fetch goes on, and the listings after it share
// its answer while it is fresh.
func Grace(listing time.Duration) time.Duration {
	return max(graceFloor, listing/5)
}

const graceFloor = 250 * time.Millisecond

// MaxAge is how old an answer a listing takes rather than wait for LXD to read its metrics
// again: at 1,000 instances with exec checks running, LXD took longer than the grace for
// every read, and every listing waited the whole grace (5.5 s against LXD's own listing's
// 0.48 s). An answer shown says when it was fetched (usage.sampled_at).
const MaxAge = time.Minute

// ErrUnavailable is what a read of usage gives when LXD gave none (it did not answer, or
// its answer could not be read): no usage is known, which says nothing of the instances.
var ErrUnavailable = errors.New("LXD gave no usage")

// LXD is what the snapshot reads LXD through (backend.LXD, or a fake in tests): a
// project's /1.0/metrics, and the connection of the moment for its instance listings.
type LXD interface {
	Metrics(project string) (string, error)
	Requests() (backend.DoHTTPer, error)
}

// Snapshot shares LXD's /1.0/metrics answer among its readers, per project, with one fetch
// in flight. With 1,000 instances the answer is megabytes, and fetching and reading it for
// every listing of a shape made the listing slower than LXD's own (issue 20). It adds no
// staleness to a fresh read (Get): an answer is reused only while LXD itself would still
// give it, that is until LXD's lifetime has passed since the answer was made. When LXD made
// it is not said, but it was after the last fetch that still got the previous answer
// began: an answer is reused until that moment plus the lifetime, and not at all before a
// change was seen. Readers that can live with an older answer take Last, which Run keeps
// fresh for the projects listed lately.
type Snapshot struct {
	lxd LXD

	// online says whether LXD is reachable (backend.LXD's probe): nothing is fetched while
	// it is not.
	online func() bool

	mu       sync.Mutex
	projects map[string]*projectUsage
	now      func() time.Time

	// fetched hears of each fetch, for the metrics (lxd_calls_total{kind="metrics"}).
	fetched func(took time.Duration, err error)

	// watched is when each project was last listed: Run keeps their usage fresh.
	watched map[string]time.Time

	// listings are the projects' instance listings (instances.go).
	listings instanceListings
}

// projectUsage is the last answer for one project.
type projectUsage struct {
	usage map[string]api.DeploymentInstanceUsage

	// err is why the last fetch gave no usage (nil when it did).
	err error

	// freshUntil is when LXD may have made a newer answer (zero: unknown, not reused).
	freshUntil time.Time

	// lastFetch is when the fetch that got usage began.
	lastFetch time.Time

	// fetching is closed when the fetch in flight ends (nil: none).
	fetching chan struct{}
}

// New returns an empty snapshot reading from lxd, usage only while online says LXD is
// reachable (nil: always); fetched (nil: none) hears of each fetch of usage.
func New(lxd LXD, online func() bool, fetched func(took time.Duration, err error)) *Snapshot {
	if fetched == nil {
		fetched = func(time.Duration, error) {}
	}

	if online == nil {
		online = func() bool { return true }
	}

	return &Snapshot{lxd: lxd, online: online, projects: map[string]*projectUsage{}, now: time.Now, fetched: fetched, watched: map[string]time.Time{}}
}

// Usage is LXD's usage of a project's running instances by name, and when the fetch that
// got it began (zero: no usage known).
type Usage struct {
	ByName map[string]api.DeploymentInstanceUsage
	At     time.Time
}

// Last is the project's last answer if it is younger than MaxAge (zero otherwise).
func (s *Snapshot) Last(project string) Usage {
	if s == nil {
		return Usage{}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[project]
	if p == nil || p.usage == nil || s.now().Sub(p.lastFetch) >= MaxAge {
		return Usage{}
	}

	return Usage{ByName: p.usage, At: p.lastFetch}
}

// Fetching says whether a fetch of the project's usage is in flight: a listing that starts
// meanwhile does not wait for it (an earlier listing already did), and shows the last
// answer if any.
func (s *Snapshot) Fetching(project string) bool {
	if s == nil {
		return false
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.projects[project]
	return p != nil && p.fetching != nil
}

// Get returns the usage of a project's running instances by name: LXD's answer while it is
// fresh, else a new one (a reader that comes while one is fetched waits for it). When LXD
// gives no usage the answer is empty and err says why (wrapping ErrUnavailable): a reader
// must not take that for instances that stopped.
func (s *Snapshot) Get(project string) (Usage, error) {
	s.mu.Lock()
	p := s.projects[project]
	if p == nil {
		p = &projectUsage{}
		s.projects[project] = p
	}

	if s.now().Before(p.freshUntil) {
		defer s.mu.Unlock()
		return Usage{ByName: p.usage, At: p.lastFetch}, nil
	}

	if p.fetching != nil {
		wait := p.fetching
		s.mu.Unlock()
		<-wait
		s.mu.Lock()
		defer s.mu.Unlock()
		if p.usage == nil {
			return Usage{}, unavailable(p.err)
		}

		return Usage{ByName: p.usage, At: p.lastFetch}, nil
	}

	done := make(chan struct{})
	p.fetching = done
	s.mu.Unlock()

	started := s.now()
	usage, err := instanceUsage(s.lxd, project)
	s.fetched(s.now().Sub(started), err)

	s.mu.Lock()
	defer s.mu.Unlock()
	defer close(done)
	p.fetching = nil
	if err != nil {
		p.usage, p.err, p.freshUntil, p.lastFetch = nil, err, time.Time{}, time.Time{}
		return Usage{}, unavailable(err)
	}

	if !p.lastFetch.IsZero() && !maps.Equal(p.usage, usage) {
		// LXD made this answer after the last fetch that got the previous one began: an
		// answer alike is LXD's cached one (its next answer moves every running instance's
		// CPU time).
		p.freshUntil = p.lastFetch.Add(LXDMetricsLifetime)
	}

	p.usage, p.err, p.lastFetch = usage, nil, started
	return Usage{ByName: usage, At: started}, nil
}

// Usage is Get's usage by instance name (webhooks.UsageSource: the governor's metrics
// events read it).
func (s *Snapshot) Usage(project string) (map[string]api.DeploymentInstanceUsage, error) {
	usage, err := s.Get(project)
	return usage.ByName, err
}

func unavailable(err error) error {
	if err == nil || errors.Is(err, ErrUnavailable) {
		return ErrUnavailable
	}

	return errors.Join(ErrUnavailable, err)
}

// ForListing is the usage a listing shows, once it has LXD's statuses: the answer fetched
// meanwhile if it has come; else the last answer if young enough (the fetch goes on, and
// later listings share it); else the fetch's answer within grace (Grace); else none.
func (s *Snapshot) ForListing(project string, fetched <-chan Usage, grace time.Duration) Usage {
	select {
	case answer := <-fetched:
		return answer
	default:
	}

	last := s.Last(project)
	if last.ByName != nil {
		return last
	}

	select {
	case answer := <-fetched:
		return answer
	case <-time.After(grace):
		return Usage{}
	}
}

// StartListing begins the usage part of a shape's listing, started at started, of a
// project whose listed shape has instances (some): the snapshot's answer (Last, kept fresh
// by Run once the project is listed) adds no call to LXD's; only a listing with no recent
// answer (the project's first, or LXD's metrics failed) fetches one beside LXD's listing,
// and never holds the listing up long (ForListing). The function returned, called once
// LXD's statuses are in, gives the usage to show (none when LXD gave none: the instances'
// statuses say what runs, not the usage).
func (s *Snapshot) StartListing(project string, some bool, started time.Time) func() Usage {
	s.Watch(project)
	usage := s.Last(project)
	if usage.ByName != nil {
		return func() Usage { return usage }
	}

	fetched := make(chan Usage, 1)
	joined := s.Fetching(project)
	go func() {
		if some && s.online() {
			answer, _ := s.Get(project)
			fetched <- answer
			return
		}

		fetched <- Usage{}
	}()

	return func() Usage {
		grace := Grace(time.Since(started))
		if joined {
			grace = 0 // the listing that started the fetch waited for it
		}

		return s.ForListing(project, fetched, grace)
	}
}

// instanceUsage reads the CPU and memory use of a project's running instances from one
// LXD /1.0/metrics call (LXD caches it for a few seconds and answers in milliseconds, where
// recursion=2 state reads take hundreds), by instance name.
func instanceUsage(lxd LXD, project string) (map[string]api.DeploymentInstanceUsage, error) {
	text, err := lxd.Metrics(project)
	if err != nil {
		return nil, err
	}

	samples, err := webhooks.ParseLXDMetrics(text)
	if err != nil {
		return nil, err
	}

	out := make(map[string]api.DeploymentInstanceUsage, len(samples))
	for key, sample := range samples {
		sampleProject, name, ok := strings.Cut(key, "/")
		if !ok || sampleProject != project {
			continue
		}

		out[name] = api.DeploymentInstanceUsage{CPUSeconds: sample.CPUSeconds, MemoryUsageBytes: sample.MemoryUsed, MemoryLimitBytes: sample.MemoryTotal}
	}

	return out, nil
}
