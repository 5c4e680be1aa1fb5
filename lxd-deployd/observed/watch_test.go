package observed

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The background keeps the usage of a project listed lately fresh, so that a listing reads
// it without a call to LXD; it leaves alone projects not listed for watchFor, and
// reads nothing while LXD is away.
func TestUsageRunKeepsListedProjectsFresh(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	cpu := atomic.Int64{}
	fake := &metricsLXD{answer: func() (string, error) { return cpuMetrics(float64(cpu.Add(1))), nil }}
	var online atomic.Bool
	online.Store(true)
	c := New(fake, online.Load, nil)
	c.now = clock
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); c.Run(ctx, 5*time.Millisecond) }()

	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("after 10 s: %s", what)
			}

			time.Sleep(5 * time.Millisecond)
		}
	}

	time.Sleep(50 * time.Millisecond)
	if fake.calls.Load() != 0 || c.Last("default").ByName != nil {
		t.Fatal("a project nobody listed is read")
	}

	c.Watch("default")
	waitFor("the listed project's usage is read", func() bool { return c.Last("default").ByName != nil })
	seen := fake.calls.Load()
	// Reads reuse an answer while LXD would still give it (Snapshot.Get): time passes.
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	waitFor("the usage is read again", func() bool { advance(LXDMetricsLifetime); return fake.calls.Load() > seen+1 })
	if got := c.Last("default"); got.ByName["web1"].CPUSeconds < 2 || got.At.IsZero() {
		t.Fatalf("the snapshot is not the newest or does not say when it was read: %+v", got)
	}

	online.Store(false)
	time.Sleep(20 * time.Millisecond) // a read in flight ends
	seen = fake.calls.Load()
	time.Sleep(50 * time.Millisecond)
	if fake.calls.Load() != seen {
		t.Fatal("usage is read while LXD is away")
	}

	// Once LXD is back the reads go on (they once stopped for good after an outage).
	online.Store(true)
	waitFor("the usage is read again once LXD is back", func() bool { advance(LXDMetricsLifetime); return fake.calls.Load() > seen })
	advance(watchFor)
	time.Sleep(20 * time.Millisecond)
	seen = fake.calls.Load()
	time.Sleep(50 * time.Millisecond)
	if fake.calls.Load() != seen {
		t.Fatal("a project not listed for watchFor is still read")
	}

	cancel()
	<-done
}
