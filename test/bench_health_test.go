package test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// BenchmarkHealthChecks measures what exec health checks cost: HEALTH_BENCH_INSTANCES
// (default 40) busybox containers of one shape, each checked every HEALTH_BENCH_INTERVAL
// (default 2s) with `sh -c true`; the daemon's CPU is read first without checks, then, once
// every instance has a verdict, the daemon's CPU and
// the CPU LXD spends (its own and its reaped children's: forkexec) are read from /proc
// over the same 20 s, and the instances left without a fresh verdict are counted (goal:
// none). doc/health.md quotes the figures.
func BenchmarkHealthChecks(b *testing.B) {
	n := envInt("HEALTH_BENCH_INSTANCES", 40)
	interval := envDuration("HEALTH_BENCH_INTERVAL", 2*time.Second)
	const window = 20 * time.Second
	env := newGovernorEnv(b, 0, n)
	env.scaleTo(b, n)

	// The daemon's CPU with the same instances and no checks, for the same window: what
	// the checks add is the difference.
	pid := env.d.cmd.Process.Pid
	time.Sleep(5 * time.Second)
	idle := cpuTime(b, pid)
	time.Sleep(window)
	idle = cpuTime(b, pid) - idle
	env.setShape(b, func(put *api.DeploymentShapePut) {
		put.Health = &api.DeploymentShapeHealth{Command: []string{"sh", "-c", "true"}, Interval: interval.String(), Grace: "0s"}
	})

	// A checker that cannot keep up never gets there: the window is measured anyway, and
	// the instances left without a verdict are counted.
	poll(time.Duration(n)*time.Second+time.Minute, func() bool {
		healthy := 0
		for _, i := range env.instancesByName(b) {
			if i.Health == api.HealthHealthy {
				healthy++
			}
		}

		return healthy == n
	}, every(time.Second))

	lxdPid := lxdDaemonPid(b, env.lxd.Dir)
	for i := 0; i < b.N; i++ {
		ours, theirs := cpuTime(b, pid), processTreeCPU(b, lxdPid)
		start := time.Now()
		time.Sleep(window)
		ours, theirs = cpuTime(b, pid)-ours, processTreeCPU(b, lxdPid)-theirs
		stale := 0
		for _, i := range env.instancesByName(b) {
			if i.HealthCheck == nil || i.HealthCheck.CheckedAt == nil || i.HealthCheck.CheckedAt.Before(start.Add(window-2*interval)) {
				stale++
			}
		}

		checks := float64(n) * window.Seconds() / interval.Seconds()
		fmt.Printf("exec health checks, %d instances every %v (%.0f checks/s), over %v:\n", n, interval, checks/window.Seconds(), window)
		fmt.Printf("  daemon CPU: %.1f%% of a core (%.2f ms per check); without checks: %.1f%% (the checks add %.2f ms each)\n",
			100*ours.Seconds()/window.Seconds(), float64(ours.Microseconds())/1000/checks, 100*idle.Seconds()/window.Seconds(), float64((ours-idle).Microseconds())/1000/checks)
		fmt.Printf("  LXD CPU for it: %.1f%% of a core (%.2f ms per check)\n", 100*theirs.Seconds()/window.Seconds(), float64(theirs.Microseconds())/1000/checks)
		fmt.Printf("  instances without a verdict in the last two intervals: %d (goal 0)\n", stale)
		fmt.Printf("  daemon RSS: %.1f MiB\n", float64(daemonRSS(b, env.d))/(1<<20))
		b.ReportMetric(100*ours.Seconds()/window.Seconds(), "daemon-cpu-%")
		b.ReportMetric(float64(stale), "stale")
	}

	b.StopTimer()
	env.cleanupLXD(b)
}

// lxdDaemonPid finds the private LXD serving dir by its environment.
func lxdDaemonPid(b testing.TB, dir string) int {
	entries, err := os.ReadDir("/proc")
	must(b, err)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}

		environ, _ := os.ReadFile("/proc/" + e.Name() + "/environ")
		cmdline, _ := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		name, _, _ := bytes.Cut(cmdline, []byte{0})
		if bytes.Contains(environ, []byte("LXD_DIR="+dir+"\x00")) && strings.HasSuffix("/"+string(name), "/lxd") {
			return pid
		}
	}

	b.Fatalf("no LXD process serves %s", dir)
	return 0
}

// processTreeCPU is a process's CPU time plus that of its children it has reaped (LXD's
// forkexec helpers, which run every exec).
func processTreeCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(b, err)
	fields := strings.Fields(string(data)[strings.LastIndexByte(string(data), ')')+2:])
	var total int64
	for _, f := range fields[11:15] { // utime stime cutime cstime
		v, _ := strconv.ParseInt(f, 10, 64)
		total += v
	}

	return time.Duration(total) * time.Second / 100 // USER_HZ
}

func envInt(name string, fallback int) int {
	n, err := strconv.Atoi(os.Getenv(name))
	if err != nil || n <= 0 {
		return fallback
	}

	return n
}

func envDuration(name string, fallback time.Duration) time.Duration {
	d, err := time.ParseDuration(os.Getenv(name))
	if err != nil || d <= 0 {
		return fallback
	}

	return d
}

// BenchmarkExecCheckCapacity says how many exec checks a second this machine's LXD can
// run, and what the daemon's checker achieves of it: EXEC_BENCH_INSTANCES (default 100)
// busybox containers on a private LXD. First `sh -c true` straight through LXD's API (POST
// exec without websockets, then the operation's /wait) at 1, 2, 4, 8, 16 and 32 at once, each
// for EXEC_BENCH_SPAN (default 15s), over kept-alive connections and, at 16, over a new
// connection per request (what the LXD client's unix transport does); then the daemon
// checks every instance every second (more than LXD can do) for the same span. Each line
// prints execs per second, latency, LXD's CPU per exec (with its reaped forkexec children)
// and the daemon's CPU per check. A last line prices ttl reports: every instance reports
// every second, 32 at once, for the same span. doc/health.md quotes the figures. EXEC_BENCH_DAEMON_ONLY=1
// runs the daemon's line only; EXEC_BENCH_PROFILE=dir writes its CPU profile there.
func BenchmarkExecCheckCapacity(b *testing.B) {
	n := envInt("EXEC_BENCH_INSTANCES", 100)
	span := envDuration("EXEC_BENCH_SPAN", 15*time.Second)
	private := lxdtest.Start(b)
	d := startDaemon(b, daemonOptions{LXDSocket: private.Socket, ExtraArgs: []string{"--debug-pprof"}})
	waitLXDOnline(b, d)
	env := &governorEnv{d: d, lxd: private, lxdConn: private.Client(b), admin: d.Unix(b), prefix: "s23x"}
	b.Cleanup(func() { stopAll(env) })
	must(b, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(b, env.admin.CreateDeploymentShape("dep1", webShape("s23cap", 0, n)))
	names := make([]string, n)
	for i := range names {
		names[i] = env.name(fmt.Sprintf("cap-%d", i))
	}

	inParallelLimit(b, names, 16, func(name string) error {
		op, err := env.admin.CreateDeploymentShapeInstance("dep1", "s23cap", name)
		if err == nil {
			err = op.Wait(context.Background())
		}

		return err
	})

	pid, lxdPid := d.cmd.Process.Pid, lxdDaemonPid(b, private.Dir)
	time.Sleep(5 * time.Second)
	for i := 0; i < b.N; i++ {
		fmt.Printf("exec capacity: %d busybox instances, `sh -c true`, %v per line (load average %s)\n", len(names), span, loadAverage())
		for _, concurrency := range []int{1, 2, 4, 8, 16, 32} {
			if os.Getenv("EXEC_BENCH_DAEMON_ONLY") != "" {
				break
			}

			r := directExecs(b, private.Socket, names, concurrency, span, true, pid, lxdPid)
			r.print(fmt.Sprintf("LXD direct, %2d at once", concurrency))
			b.ReportMetric(r.rate(), fmt.Sprintf("direct-%d-execs/s", concurrency))
		}

		if os.Getenv("EXEC_BENCH_DAEMON_ONLY") == "" {
			r := directExecs(b, private.Socket, names, 16, span, false, pid, lxdPid)
			r.print("LXD direct, 16 at once, a connection per request")
			b.ReportMetric(r.rate(), "direct-16-noka-execs/s")
		}

		r := daemonChecks(b, env, len(names), span, pid, lxdPid)
		r.print(fmt.Sprintf("the daemon's checker, %d every 1s", len(names)))
		b.ReportMetric(r.rate(), "daemon-checks/s")

		r = ttlReports(b, env, names, span, pid, lxdPid)
		r.print(fmt.Sprintf("ttl reports, %d every 1s, 32 at once", len(names)))
		b.ReportMetric(float64(r.daemon.Microseconds())/1000/float64(max(r.execs, 1)), "ttl-ms/report")
	}

	b.StopTimer()
	env.cleanupLXD(b)
}

// inParallelLimit runs f on every name, limit at once; any error fails the benchmark.
func inParallelLimit(b *testing.B, names []string, limit int, f func(name string) error) {
	slots := make(chan struct{}, limit)
	inParallel(b, names, func(name string) error {
		slots <- struct{}{}
		defer func() { <-slots }()
		return f(name)
	})
}

// execRun is one line of BenchmarkExecCheckCapacity.
type execRun struct {
	execs     int
	failed    int
	elapsed   time.Duration
	latencies []time.Duration
	daemon    time.Duration // the daemon's CPU over the run
	lxd       time.Duration // LXD's CPU over the run, its reaped children included
	note      string
}

func (r execRun) rate() float64 { return float64(r.execs) / r.elapsed.Seconds() }

func (r execRun) print(what string) {
	per := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(max(r.execs, 1)) }
	latency := "-"
	if len(r.latencies) > 0 {
		sorted := append([]time.Duration{}, r.latencies...)
		sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
		latency = fmt.Sprintf("median %v, p90 %v", ms(sorted[len(sorted)/2]), ms(sorted[len(sorted)*9/10]))
	}

	fmt.Printf("  %-50s %6.1f execs/s (%d, %d failed); latency %s; LXD %.1f ms CPU per exec (%.0f%% of a core); daemon %.2f ms per exec (%.0f%%)%s\n",
		what+":", r.rate(), r.execs, r.failed, latency, per(r.lxd), 100*r.lxd.Seconds()/r.elapsed.Seconds(), per(r.daemon), 100*r.daemon.Seconds()/r.elapsed.Seconds(), r.note)
}

// directExecs runs `sh -c true` in the instances, round robin, concurrency at once for
// span, straight through LXD's API over its unix socket.
func directExecs(b *testing.B, socket string, names []string, concurrency int, span time.Duration, keepAlive bool, pid int, lxdPid int) execRun {
	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", socket)
		},
		DisableKeepAlives:   !keepAlive,
		MaxIdleConnsPerHost: 64,
	}

	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: 30 * time.Second}
	var mu sync.Mutex
	var run execRun
	var next atomic.Int64
	daemon, lxd := cpuTime(b, pid), processTreeCPU(b, lxdPid)
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < concurrency; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Since(start) < span {
				name := names[int(next.Add(1))%len(names)]
				began := time.Now()
				err := execTrue(client, name)
				took := time.Since(began)
				mu.Lock()
				run.execs++
				run.latencies = append(run.latencies, took)
				if err != nil {
					run.failed++
					if run.failed == 1 {
						run.note = "; first failure: " + err.Error()
					}
				}

				mu.Unlock()
			}
		}()
	}

	wg.Wait()
	run.elapsed = time.Since(start)
	run.daemon, run.lxd = cpuTime(b, pid)-daemon, processTreeCPU(b, lxdPid)-lxd
	return run
}

// execTrue is one exec without websockets and its operation's /wait.
func execTrue(client *http.Client, name string) error {
	body := `{"command": ["sh", "-c", "true"], "wait-for-websocket": false, "interactive": false, "record-output": false}`
	resp, err := client.Post("http://lxd/1.0/instances/"+name+"/exec", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}

	var started lxdapi.Response
	err = json.NewDecoder(resp.Body).Decode(&started)
	resp.Body.Close()
	if err != nil || started.Operation == "" {
		return fmt.Errorf("exec in %s: %v %s", name, err, started.Error)
	}

	opURL, _, _ := strings.Cut(started.Operation, "?")
	resp, err = client.Get("http://lxd" + opURL + "/wait?timeout=30")
	if err != nil {
		return err
	}

	var done lxdapi.Response
	err = json.NewDecoder(resp.Body).Decode(&done)
	resp.Body.Close()
	if err != nil {
		return err
	}

	op, err := done.MetadataAsOperation()
	if err != nil {
		return err
	}

	if code, _ := op.Metadata["return"].(float64); op.StatusCode != lxdapi.Success || code != 0 {
		return fmt.Errorf("exec in %s: %s, exit %v %s", name, op.Status, op.Metadata["return"], op.Err)
	}

	return nil
}

// daemonChecks gives the shape an exec check every second, waits until the checker is
// running, and counts the checks it achieves over span (health_checks_total), with the
// instances overdue at the end.
func daemonChecks(b *testing.B, env *governorEnv, n int, span time.Duration, pid int, lxdPid int) execRun {
	putShape(b, env, "s23cap", func(put *api.DeploymentShapePut) {
		put.Health = &api.DeploymentShapeHealth{Command: []string{"sh", "-c", "true"}, Interval: "1s", Grace: "0s"}
	})

	defer putShape(b, env, "s23cap", func(put *api.DeploymentShapePut) { put.Health = nil })
	checks := func() float64 { return execChecksRun(scrape(b, env.admin)) }

	errors := func(text string) float64 {
		return max(sample(text, `lxd_deployd_health_checks_total{kind="exec",result="error"}`), 0)
	}

	// Every instance's first check records its output (four more requests): the window
	// starts once they are done, or after a minute.
	poll(time.Minute, func() bool { return checks() >= float64(n) }, every(time.Second))

	errorsBefore := errors(scrape(b, env.admin))
	before, daemon, lxd := checks(), cpuTime(b, pid), processTreeCPU(b, lxdPid)
	start := time.Now()
	if dir := os.Getenv("EXEC_BENCH_PROFILE"); dir != "" {
		file := pprofGet(b, env.d, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(span.Seconds())), dir, "exec-capacity-cpu.pprof")
		defer pprofTop(file, "-cum")
		defer fmt.Printf("  CPU profile of the daemon's checks: %s\n", file)
	} else {
		time.Sleep(span)
	}

	run := execRun{execs: int(checks() - before), elapsed: time.Since(start)}
	run.daemon, run.lxd = cpuTime(b, pid)-daemon, processTreeCPU(b, lxdPid)-lxd
	text := scrape(b, env.admin)
	run.failed = int(errors(text) - errorsBefore)
	if run.failed > 0 {
		instances, err := env.admin.GetDeploymentShapeInstances("dep1", "s23cap")
		must(b, err)
		for _, i := range instances {
			if i.HealthCheck != nil && strings.HasPrefix(i.HealthCheck.Output, "check did not run") {
				run.note += "; an error: " + i.HealthCheck.Output
				break
			}
		}
	}
	run.note = fmt.Sprintf("; asked %d/s; overdue at the end: %.0f of %d", n, sample(text, `lxd_deployd_health_checks_overdue{kind="exec"}`), n)
	return run
}

// ttlReports switches the shape to a ttl check and has every instance report every second
// for span through the admin socket, 32 at once: the daemon's CPU per report, and the
// latency of a report (its batch's commit included).
func ttlReports(b *testing.B, env *governorEnv, names []string, span time.Duration, pid int, lxdPid int) execRun {
	putShape(b, env, "s23cap", func(put *api.DeploymentShapePut) {
		put.Health = &api.DeploymentShapeHealth{TTL: "30s", Grace: "0s"}
	})

	defer putShape(b, env, "s23cap", func(put *api.DeploymentShapePut) { put.Health = nil })
	var run execRun
	var mu sync.Mutex
	daemon, lxd := cpuTime(b, pid), processTreeCPU(b, lxdPid)
	start := time.Now()
	for round := 0; time.Since(start) < span; round++ {
		next := start.Add(time.Duration(round+1) * time.Second)
		inParallelLimit(b, names, 32, func(name string) error {
			began := time.Now()
			err := env.admin.ReportDeploymentShapeInstanceHealth("dep1", "s23cap", name, api.DeploymentInstanceHealthPut{Status: api.HealthReportPassing})
			mu.Lock()
			run.execs++
			run.latencies = append(run.latencies, time.Since(began))
			mu.Unlock()
			return err
		})

		time.Sleep(time.Until(next))
	}

	run.elapsed = time.Since(start)
	run.daemon, run.lxd = cpuTime(b, pid)-daemon, processTreeCPU(b, lxdPid)-lxd
	return run
}

// execChecksRun is how many exec checks the daemon ran, from a scrape of its metrics.
func execChecksRun(text string) float64 {
	total := 0.0
	for _, result := range []string{"passed", "failed", "error"} {
		total += max(sample(text, `lxd_deployd_health_checks_total{kind="exec",result="`+result+`"}`), 0)
	}

	return total
}

// loadAverage is the machine's 1-minute load average, printed beside figures taken on a
// shared machine.
func loadAverage() string {
	data, _ := os.ReadFile("/proc/loadavg")
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return "?"
	}

	return fields[0]
}
