package test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// BenchmarkLaunch measures creating and starting one busybox container through
// lxd-deployd (bound check, reservation, operation) against doing the same directly with
// LXD's client, sequentially (median of 10) and as 10 concurrent launches. Run with
// `make bench`; it prints the figures and reports them as benchmark metrics.
func BenchmarkLaunch(b *testing.B) {
	const n = 10
	for i := 0; i < b.N; i++ {
		benchLaunch(b, n)
	}
}

func benchLaunch(b *testing.B, n int) {
	env := newGovernorEnv(b, 0, n)

	direct := func(name string) time.Duration {
		start := time.Now()
		err := launchDirect(env, name)
		if err != nil {
			b.Fatal(err)
		}

		return time.Since(start)
	}

	var acceptMu sync.Mutex
	var acceptTimes []time.Duration
	ours := func(name string) time.Duration {
		start := time.Now()
		op, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", name)
		acceptMu.Lock()
		acceptTimes = append(acceptTimes, time.Since(start))
		acceptMu.Unlock()
		if err == nil {
			err = op.Wait(context.Background())
		}

		if err != nil {
			b.Fatal(err)
		}

		return time.Since(start)
	}

	var directTimes, ourTimes []time.Duration
	for i := 0; i < n; i++ {
		// Alternate so that any drift of the machine affects both alike.
		directTimes = append(directTimes, direct(env.name(fmt.Sprintf("d%d", i))))
		ourTimes = append(ourTimes, ours(env.name(fmt.Sprintf("o%d", i))))
	}

	env.removeAll(b)
	concurrent := func(launch func(string) time.Duration, prefix string) time.Duration {
		start := time.Now()
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				launch(env.name(fmt.Sprintf("%s%d", prefix, i)))
			}(i)
		}

		wg.Wait()
		return time.Since(start)
	}

	directWall := concurrent(direct, "cd")
	ourWall := concurrent(ours, "co")

	directMedian, ourMedian := median(directTimes), median(ourTimes)
	ratio := float64(ourMedian) / float64(directMedian)
	fmt.Printf("launch (create+start busybox), median of %d:\n", n)
	fmt.Printf("  direct LXD client:  %v\n", directMedian.Round(time.Millisecond))
	fmt.Printf("  through lxd-deployd: %v\n", ourMedian.Round(time.Millisecond))
	fmt.Printf("  ratio %.3f, overhead %v per launch\n", ratio, (ourMedian - directMedian).Round(100*time.Microsecond))
	fmt.Printf("  time to accept a launch (bound check + reservation, HTTPS round trip): median %v\n", median(acceptTimes).Round(100*time.Microsecond))
	fmt.Printf("%d concurrent launches, wall time:\n", n)
	fmt.Printf("  direct LXD client:  %v\n", directWall.Round(time.Millisecond))
	fmt.Printf("  through lxd-deployd: %v (ratio %.3f)\n", ourWall.Round(time.Millisecond), float64(ourWall)/float64(directWall))
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(ourMedian-directMedian)/float64(time.Millisecond), "overhead-ms")
	b.ReportMetric(float64(ourWall)/float64(directWall), "concurrent-ratio")
	env.cleanupLXD(b)
}
