// Package loadgen is the HTTP load of the front door's benchmarks (make bench): a closed
// loop for throughput, an open loop for latency, and what the scheduler says a process
// used meanwhile. The loopback bench of the HAProxy driver and the end-to-end bench of a
// shape's door send the same loads with it, so their figures compare.
package loadgen

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// ClosedLoop is requests per second from workers over span, each worker sending its next
// request when the last one ended and taking urls in turn, and the count of failed ones
// (a connection error or not a 200), which also fail the benchmark.
func ClosedLoop(tb testing.TB, urls []string, workers int, span time.Duration) (float64, int64) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxIdleConns: workers * 2}}
	defer client.CloseIdleConnections()
	var n, failed atomic.Int64
	stop := time.Now().Add(span)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; time.Now().Before(stop); i++ {
				if get(client, urls[i%len(urls)]) != nil {
					failed.Add(1)
					continue
				}

				n.Add(1)
			}
		}(w)
	}

	wg.Wait()
	if failed.Load() > 0 {
		tb.Errorf("%d requests to %v failed", failed.Load(), urls)
	}

	return float64(n.Load()) / span.Seconds(), failed.Load()
}

// OpenLoop is p50 and p99 of rate requests per second over span, sent on time whatever
// the answers, taking urls in turn; a failed request fails the benchmark.
func OpenLoop(tb testing.TB, urls []string, rate int, span time.Duration) (time.Duration, time.Duration) {
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxIdleConns: 128}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var took []time.Duration
	var wg sync.WaitGroup
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	stop := time.Now().Add(span)
	for i := 0; time.Now().Before(stop); i++ {
		<-tick.C
		wg.Add(1)
		go func(url string) {
			defer wg.Done()
			start := time.Now()
			err := get(client, url)
			if err != nil {
				tb.Error(err)
				return
			}

			mu.Lock()
			took = append(took, time.Since(start))
			mu.Unlock()
		}(urls[i%len(urls)])
	}

	wg.Wait()
	return Percentile(took, 50), Percentile(took, 99)
}

// get sends one request and reads its answer whole: an error unless it is a 200.
func get(client *http.Client, url string) error {
	resp, err := client.Get(url)
	if err != nil {
		return err
	}

	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
	}

	return nil
}

// Percentile is the p-th percentile (0-100) of the durations, nearest rank (0 for none).
func Percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}

	sorted := slices.Clone(d)
	slices.Sort(sorted)
	rank := int(p/100*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(rank, len(sorted)-1))]
}

// Sched is what the scheduler says of a process's threads (/proc/<pid>/task/*/schedstat,
// in nanoseconds): the time they ran, the time they waited on a run queue for a CPU, and
// how many times they were given one. Unlike utime and stime (clock ticks), it counts
// every nanosecond.
type Sched struct {
	Ran, Waited time.Duration
	Slices      int64
}

// SchedOf is the sum over the process's threads now.
func SchedOf(pid int) Sched {
	var total Sched
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, task := range tasks {
		raw, err := os.ReadFile(task)
		if err != nil {
			continue
		}

		var ran, waited, slices int64
		if _, err := fmt.Sscan(string(raw), &ran, &waited, &slices); err == nil {
			total.Ran += time.Duration(ran)
			total.Waited += time.Duration(waited)
			total.Slices += slices
		}
	}

	return total
}

// Sub is what the process used between o and s.
func (s Sched) Sub(o Sched) Sched {
	return Sched{Ran: s.Ran - o.Ran, Waited: s.Waited - o.Waited, Slices: s.Slices - o.Slices}
}

// Per is s per request of n (slices counted per 1000 requests).
func (s Sched) Per(n int64) Sched {
	n = max(n, 1)
	return Sched{Ran: s.Ran / time.Duration(n), Waited: s.Waited / time.Duration(n), Slices: s.Slices * 1000 / n}
}

// String is a per-request Sched (Per).
func (s Sched) String() string {
	return fmt.Sprintf("ran %v, waited for a CPU %v, %.2f runs", s.Ran.Round(100*time.Nanosecond), s.Waited.Round(100*time.Nanosecond), float64(s.Slices)/1000)
}
