package observed

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// metricsLXD answers /1.0/metrics with what answer says of the project, counting calls.
type metricsLXD struct {
	calls  atomic.Int32
	answer func() (string, error)
}

// Metrics is backend.LXD.Metrics.
func (f *metricsLXD) Metrics(string) (string, error) {
	f.calls.Add(1)
	return f.answer()
}

// Requests is backend.LXD.Requests: these tests list no instances.
func (f *metricsLXD) Requests() (backend.DoHTTPer, error) {
	return nil, errors.New("no instance listings in this test")
}

func cpuMetrics(seconds float64) string {
	return fmt.Sprintf("# TYPE lxd_cpu_seconds_total counter\nlxd_cpu_seconds_total{cpu=\"0\",mode=\"user\",name=\"web1\",project=\"default\",type=\"container\"} %g\n", seconds)
}

// An answer is reused only while LXD would still give it: never before a change was seen
// (when LXD made it is unknown), then until LXD's lifetime has passed since the last fetch
// that still got the previous answer began.
func TestUsageCacheAddsNoStaleness(t *testing.T) {
	now := time.Unix(1000, 0)
	cpu := 1.0
	fake := &metricsLXD{answer: func() (string, error) { return cpuMetrics(cpu), nil }}
	c := New(fake, nil, nil)
	c.now = func() time.Time { return now }
	get := func(wantCalls int32, wantCPU float64) {
		t.Helper()
		answer, _ := c.Get("default")
		usage := answer.ByName
		if fake.calls.Load() != wantCalls || usage["web1"].CPUSeconds != wantCPU {
			t.Fatalf("at %v: %d calls and %v, want %d calls and %v", now.Unix(), fake.calls.Load(), usage["web1"].CPUSeconds, wantCalls, wantCPU)
		}
	}

	get(1, 1)
	now = now.Add(time.Second)
	get(2, 1) // unknown when LXD made it: asked again
	now = now.Add(time.Second)
	cpu = 2 // LXD made a new answer after the fetch at 1001 began
	get(3, 2)
	now = now.Add(6 * time.Second) // 1008: LXD's answer from >= 1001 may be its own until 1009
	get(3, 2)
	now = now.Add(time.Second) // 1009: maybe not any more
	get(4, 2)
	cpu = 3
	now = now.Add(time.Second)
	get(5, 3) // 1010, a change after the fetch at 1009 began: fresh until 1017
	now = now.Add(6 * time.Second)
	get(5, 3)
	now = now.Add(time.Second)
	get(6, 3)

	// A failed answer is no answer, and forgets what it knew.
	fake.answer = func() (string, error) { return "", errors.New("LXD is gone") }
	now = now.Add(time.Minute)
	if usage, err := c.Get("default"); usage.ByName != nil || !usage.At.IsZero() || !errors.Is(err, ErrUnavailable) || fake.calls.Load() != 7 {
		t.Fatalf("a failed fetch: %+v (%v) after %d calls", usage, err, fake.calls.Load())
	}

	// An unreachable LXD is no usage and an error, never an empty answer (instances that
	// all stopped), and says why; nor is the last answer shown as the project's usage.
	if _, err := c.Get("default"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "LXD is gone") {
		t.Fatalf("a failed fetch says %v", err)
	}

	if last := c.Last("default"); last.ByName != nil {
		t.Fatalf("after a failed fetch the snapshot still shows %+v", last)
	}
}

// Listings that come while one fetch is in flight wait for it rather than ask LXD again.
func TestUsageCacheOneFetchInFlight(t *testing.T) {
	release := make(chan struct{})
	fake := &metricsLXD{answer: func() (string, error) { <-release; return cpuMetrics(5), nil }}
	var reported atomic.Int32 // the fetches the metrics hear of (lxd_calls_total{kind="metrics"})
	c := New(fake, nil, func(_ time.Duration, err error) {
		if err == nil {
			reported.Add(1)
		}
	})
	var wg sync.WaitGroup
	results := make([]float64, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answer, _ := c.Get("default")
			results[i] = answer.ByName["web1"].CPUSeconds
		}()
	}

	for fake.calls.Load() == 0 {
		time.Sleep(time.Millisecond)
	}

	time.Sleep(50 * time.Millisecond) // the others join the fetch in flight
	if !c.Fetching("default") || c.Fetching("other") {
		t.Fatal("a fetch in flight is not seen as one (a listing then would wait for it again)")
	}

	close(release)
	wg.Wait()
	if c.Fetching("default") {
		t.Fatal("a fetch that ended is still seen in flight")
	}

	if fake.calls.Load() != 1 || reported.Load() != 1 {
		t.Fatalf("%d fetches (%d reported) for 8 listings at once, want 1", fake.calls.Load(), reported.Load())
	}

	for _, r := range results {
		if r != 5 {
			t.Fatalf("results %v", results)
		}
	}
}

// A listing takes the fetch's answer if it has come, else the last answer while it is
// younger than MaxAge (LXD reading its metrics again must not hold every listing up
// for the whole grace), else waits for the fetch within the grace, else goes without.
func TestUsageForListing(t *testing.T) {
	now := time.Unix(1000, 0)
	fake := &metricsLXD{answer: func() (string, error) { return cpuMetrics(1), nil }}
	c := New(fake, nil, nil)
	c.now = func() time.Time { return now }
	first, _ := c.Get("default")
	if first.ByName["web1"].CPUSeconds != 1 || !first.At.Equal(now) {
		t.Fatalf("first answer %+v", first)
	}

	come := make(chan Usage, 1)
	come <- Usage{ByName: cpuUsage(2), At: now.Add(time.Second)}
	if got := c.ForListing("default", come, time.Hour); got.ByName["web1"].CPUSeconds != 2 {
		t.Fatalf("an answer that has come: %+v", got)
	}

	never := make(chan Usage)
	now = now.Add(MaxAge - time.Second)
	start := time.Now()
	if got := c.ForListing("default", never, time.Hour); got.ByName["web1"].CPUSeconds != 1 || !got.At.Equal(first.At) || time.Since(start) > time.Second {
		t.Fatalf("a young last answer: %+v after %v", got, time.Since(start))
	}

	now = now.Add(time.Second)
	late := make(chan Usage, 1)
	go func() { time.Sleep(100 * time.Millisecond); late <- Usage{ByName: cpuUsage(3), At: now} }()
	if got := c.ForListing("default", late, time.Hour); got.ByName["web1"].CPUSeconds != 3 {
		t.Fatalf("an old last answer is not shown, the fetch is waited for: %+v", got)
	}

	start = time.Now()
	if got := c.ForListing("default", never, 50*time.Millisecond); got.ByName != nil || time.Since(start) > 10*time.Second {
		t.Fatalf("past the grace, a listing goes without usage: %+v after %v", got, time.Since(start))
	}

	if Grace(100*time.Millisecond) != graceFloor || Grace(10*time.Second) != 2*time.Second {
		t.Fatalf("grace %v after a listing of 100 ms, %v after 10 s: want the floor, then a fifth", Grace(100*time.Millisecond), Grace(10*time.Second))
	}
}

func cpuUsage(seconds float64) map[string]api.DeploymentInstanceUsage {
	return map[string]api.DeploymentInstanceUsage{"web1": {CPUSeconds: seconds}}
}

// A listing shows the snapshot's answer without a call to LXD once it has one; with none it
// fetches beside LXD's listing only when the shape has instances and LXD is reachable, and
// watches the project either way (Run keeps it fresh from then on).
func TestStartListing(t *testing.T) {
	fake := &metricsLXD{answer: func() (string, error) { return cpuMetrics(4), nil }}
	var online atomic.Bool
	s := New(fake, online.Load, nil)
	if got := s.StartListing("default", true, time.Now())(); got.ByName != nil || fake.calls.Load() != 0 {
		t.Fatalf("LXD away: %+v after %d calls", got, fake.calls.Load())
	}

	online.Store(true)
	if got := s.StartListing("default", false, time.Now())(); got.ByName != nil || fake.calls.Load() != 0 {
		t.Fatalf("a shape without instances: %+v after %d calls", got, fake.calls.Load())
	}

	if len(s.watchedProjects()) != 1 {
		t.Fatalf("the listed project is not watched: %v", s.watchedProjects())
	}

	// The first listing with instances fetches, within the grace (a fake answers at once).
	got := s.StartListing("default", true, time.Now().Add(-time.Hour))()
	if got.ByName["web1"].CPUSeconds != 4 || got.At.IsZero() || fake.calls.Load() != 1 {
		t.Fatalf("the first listing: %+v after %d calls", got, fake.calls.Load())
	}

	again := s.StartListing("default", true, time.Now())()
	if !again.At.Equal(got.At) || fake.calls.Load() != 1 {
		t.Fatalf("a listing with a recent answer: %+v after %d calls", again, fake.calls.Load())
	}
}
