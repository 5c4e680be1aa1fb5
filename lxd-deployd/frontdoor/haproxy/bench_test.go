package haproxy

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/internal/loadgen"
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
		self0 := loadgen.SchedOf(os.Getpid())
		straight, _ := loadgen.ClosedLoop(b, direct, 32, span)
		self1, hap1 := loadgen.SchedOf(os.Getpid()), loadgen.SchedOf(pid)
		through, _ := loadgen.ClosedLoop(b, door, 32, span)
		self2, hap2 := loadgen.SchedOf(os.Getpid()), loadgen.SchedOf(pid)
		nStraight, nThrough := int64(straight*span.Seconds()), int64(through*span.Seconds())
		// Both at once, so the machine's other work weighs on each alike.
		var dp50, dp99, hp50, hp99 time.Duration
		var lw sync.WaitGroup
		lw.Add(2)
		go func() { defer lw.Done(); dp50, dp99 = loadgen.OpenLoop(b, direct, 200, span) }()
		go func() { defer lw.Done(); hp50, hp99 = loadgen.OpenLoop(b, door, 200, span) }()
		lw.Wait()
		fmt.Printf("front door throughput (haproxy nbthread %d): straight %.0f req/s, through haproxy %.0f req/s: %.2fx (goal >= 0.9x; loopback, one machine's cores shared by generator, haproxy and backends)\n",
			d.threads, straight, through, through/straight)
		// HAProxy's own CPU per request does not depend on how busy the machine is; its
		// wait for a CPU does.
		hap := hap2.Sub(hap1).Per(nThrough)
		fmt.Printf("front door cost: haproxy's worker ran %v per request and waited %v for a CPU (over %d requests)\n",
			hap.Ran.Round(100*time.Nanosecond), hap.Waited.Round(100*time.Nanosecond), nThrough)
		// Client and backends are this process. With the cores to themselves, this process
		// and haproxy would share them, and the ratio would be what each request costs
		// straight over what it costs through the door: with backends that do no work,
		// haproxy's part alone keeps it far below 0.9x.
		st, th := self1.Sub(self0).Per(nStraight), self2.Sub(self1).Per(nThrough)
		fmt.Printf("front door why: CPU per request straight %v (client and backends, this process), through the door %v (client and backends %v + haproxy %v): %.2fx if the cores were the bench's alone\n",
			st.Ran, th.Ran+hap.Ran, th.Ran, hap.Ran, float64(st.Ran)/float64(th.Ran+hap.Ran))
		fmt.Printf("front door latency at 200 req/s each, run side by side: straight p50 %v p99 %v, through haproxy p50 %v p99 %v: added p99 %v (goal <= 1ms)\n",
			dp50, dp99, hp50, hp99, hp99-dp99)
		b.ReportMetric(through/straight, "throughput-ratio")
		b.ReportMetric(float64((hp99 - dp99).Microseconds()), "added-p99-µs")
	}
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
