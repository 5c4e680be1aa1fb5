package haproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
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
		pid := workerPid(b, d)
		self0 := schedOf(os.Getpid())
		straight := throughput(b, direct, 32, span)
		self1, hap1 := schedOf(os.Getpid()), schedOf(pid)
		through := throughput(b, door, 32, span)
		self2, hap2 := schedOf(os.Getpid()), schedOf(pid)
		nStraight, nThrough := straight*span.Seconds(), through*span.Seconds()
		// Both at once, so the machine's other work weighs on each alike.
		var dp50, dp99, hp50, hp99 time.Duration
		var lw sync.WaitGroup
		lw.Add(2)
		go func() { defer lw.Done(); dp50, dp99 = latency(b, direct, 200, span) }()
		go func() { defer lw.Done(); hp50, hp99 = latency(b, door, 200, span) }()
		lw.Wait()
		fmt.Printf("front door throughput (haproxy nbthread %d): straight %.0f req/s, through haproxy %.0f req/s: %.2fx (goal >= 0.9x; loopback, one machine's cores shared by generator, haproxy and backends)\n",
			d.threads, straight, through, through/straight)
		// HAProxy's own CPU per request does not depend on how busy the machine is; its
		// wait for a CPU does.
		hap := hap2.sub(hap1).per(nThrough)
		fmt.Printf("front door cost: haproxy's worker ran %v per request and waited %v for a CPU (over %.0f requests)\n",
			hap.ran, hap.waited, nThrough)
		// Client and backends are this process. With the cores to themselves, this process
		// and haproxy would share them, and the ratio would be what each request costs
		// straight over what it costs through the door: with backends that do no work,
		// haproxy's part alone keeps it far below 0.9x.
		st, th := self1.sub(self0).per(nStraight), self2.sub(self1).per(nThrough)
		fmt.Printf("front door why: CPU per request straight %v (client and backends, this process), through the door %v (client and backends %v + haproxy %v): %.2fx if the cores were the bench's alone\n",
			st.ran, th.ran+hap.ran, th.ran, hap.ran, float64(st.ran)/float64(th.ran+hap.ran))
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

// workerPid is the pid of HAProxy's worker (from "show info").
func workerPid(b *testing.B, d *Private) int {
	out, err := command(context.Background(), d.AdminSocket(), "show info")
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Pid: "); ok {
			pid, _ := strconv.Atoi(strings.TrimSpace(v))
			return pid
		}
	}
	b.Fatal("show info names no Pid")
	return 0
}

// sched is what the scheduler says of a process's threads (/proc/<pid>/task/*/schedstat,
// nanoseconds): how long they ran and how long they waited on a run queue for a CPU.
// Unlike utime and stime (clock ticks), it counts every nanosecond.
type sched struct{ ran, waited time.Duration }

func schedOf(pid int) sched {
	var total sched
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/schedstat", pid))
	for _, task := range tasks {
		raw, err := os.ReadFile(task)
		if err != nil {
			continue
		}
		var ran, waited int64
		if _, err := fmt.Sscan(string(raw), &ran, &waited); err == nil {
			total.ran += time.Duration(ran)
			total.waited += time.Duration(waited)
		}
	}
	return total
}

func (s sched) sub(o sched) sched { return sched{ran: s.ran - o.ran, waited: s.waited - o.waited} }

// per divides by n requests.
func (s sched) per(n float64) sched {
	if n < 1 {
		n = 1
	}
	return sched{ran: (s.ran / time.Duration(n)).Round(100 * time.Nanosecond), waited: (s.waited / time.Duration(n)).Round(100 * time.Nanosecond)}
}
