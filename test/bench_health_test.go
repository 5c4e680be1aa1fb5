package test

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
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
	deadline := time.Now().Add(time.Duration(n)*time.Second + time.Minute)
	for time.Now().Before(deadline) {
		healthy := 0
		for _, i := range env.instancesByName(b) {
			if i.Health == api.HealthHealthy {
				healthy++
			}
		}

		if healthy == n {
			break
		}

		time.Sleep(time.Second)
	}

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
func lxdDaemonPid(b *testing.B, dir string) int {
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
