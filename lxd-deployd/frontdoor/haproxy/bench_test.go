package haproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

// BenchmarkFrontDoor prints the front door's overhead (issue 35's goals): throughput
// through HAProxy against the same load sent straight to the backends (goal >= 0.9x),
// and the p99 latency HAProxy adds at 200 requests/s (goal <= 1 ms). Everything runs on
// loopback on this machine's cores: the load generator, HAProxy and the backends share
// them, so the throughput ratio is a floor of what separate hosts would see.
func BenchmarkFrontDoor(b *testing.B) {
	needHAProxy(b)
	dir, err := os.MkdirTemp("", "fdb")
	if err != nil {
		b.Fatal(err)
	}
	defer os.RemoveAll(dir)
	d, err := NewPrivate(context.Background(), PrivateConfig{Dir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Stop(ctx)
	}()
	be1, be2 := startBackend(b, "a"), startBackend(b, "b")
	listen := freePort(b)
	fe := frontdoor.Frontend{Key: "bench/web/front", Listen: listen, Protocol: "http", Servers: []frontdoor.Server{
		{Name: "a", Address: "127.0.0.1", Port: be1.port, State: frontdoor.StateServing},
		{Name: "b", Address: "127.0.0.1", Port: be2.port, State: frontdoor.StateServing},
	}}
	if err := d.Apply(context.Background(), []frontdoor.Frontend{fe}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "both servers up", func() bool {
		st, err := d.Stats(context.Background())
		return err == nil && st[fe.Key].Servers["a"].Up && st[fe.Key].Servers["b"].Up
	})
	direct := []string{fmt.Sprintf("http://127.0.0.1:%d/", be1.port), fmt.Sprintf("http://127.0.0.1:%d/", be2.port)}
	door := []string{"http://" + listen + "/"}
	const span = 4 * time.Second
	for i := 0; i < b.N; i++ {
		straight := throughput(b, direct, 32, span)
		cpu0 := workerCPU(b, d)
		through := throughput(b, door, 32, span)
		cpu := workerCPU(b, d) - cpu0
		// Both at once, so the machine's other work weighs on each alike.
		var dp50, dp99, hp50, hp99 time.Duration
		var lw sync.WaitGroup
		lw.Add(2)
		go func() { defer lw.Done(); dp50, dp99 = latency(b, direct, 200, span) }()
		go func() { defer lw.Done(); hp50, hp99 = latency(b, door, 200, span) }()
		lw.Wait()
		fmt.Printf("front door throughput (haproxy nbthread %d): straight %.0f req/s, through haproxy %.0f req/s: %.2fx (goal >= 0.9x; loopback, one machine's cores shared by generator, haproxy and backends)\n",
			d.threads, straight, through, through/straight)
		// HAProxy's own CPU per request does not depend on how busy the machine is.
		fmt.Printf("front door cost: haproxy's worker used %v of CPU per request (utime+stime over %.0f requests)\n",
			cpu/time.Duration(through*span.Seconds()), through*span.Seconds())
		fmt.Printf("front door latency at 200 req/s each, run side by side: straight p50 %v p99 %v, through haproxy p50 %v p99 %v: added p99 %v (goal <= 1ms)\n",
			dp50, dp99, hp50, hp99, hp99-dp99)
		b.ReportMetric(through/straight, "throughput-ratio")
		b.ReportMetric(float64((hp99 - dp99).Microseconds()), "added-p99-µs")
	}
}

// throughput is closed-loop requests per second from workers over span.
func throughput(b testing.TB, urls []string, workers int, span time.Duration) float64 {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers, MaxIdleConns: workers * 2}}
	defer client.CloseIdleConnections()
	var n, fail atomic.Int64
	stop := time.Now().Add(span)
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; time.Now().Before(stop); i++ {
				resp, err := client.Get(urls[i%len(urls)])
				if err != nil {
					fail.Add(1)
					continue
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				n.Add(1)
			}
		}(w)
	}
	wg.Wait()
	if fail.Load() > 0 {
		b.Errorf("%d requests failed", fail.Load())
	}
	return float64(n.Load()) / span.Seconds()
}

// latency is p50 and p99 of an open-loop load at rate requests per second over span.
func latency(b testing.TB, urls []string, rate int, span time.Duration) (time.Duration, time.Duration) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxIdleConns: 128}}
	defer client.CloseIdleConnections()
	var mu sync.Mutex
	var lat []time.Duration
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
			resp, err := client.Get(url)
			if err != nil {
				b.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			lat = append(lat, time.Since(start))
			mu.Unlock()
		}(urls[i%len(urls)])
	}
	wg.Wait()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	if len(lat) == 0 {
		return 0, 0
	}
	return lat[len(lat)/2], lat[len(lat)*99/100]
}

// workerCPU is the CPU time HAProxy's worker has used (user and system).
func workerCPU(b *testing.B, d *Private) time.Duration {
	out, err := command(context.Background(), d.AdminSocket(), "show info")
	if err != nil {
		b.Fatal(err)
	}
	var pid int
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Pid: "); ok {
			pid, _ = strconv.Atoi(strings.TrimSpace(v))
		}
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// Fields after the command: state is f[0], utime f[11], stime f[12], in clock ticks
	// (100 per second on Linux).
	ut, _ := strconv.Atoi(f[11])
	st, _ := strconv.Atoi(f[12])
	return time.Duration(ut+st) * 10 * time.Millisecond
}
