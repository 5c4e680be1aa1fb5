package test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// BenchmarkRollingRollout replaces 20 busybox containers with a rolling rollout (max_surge
// 4, max_unavailable 0), and compares its wall time with the same LXD creates and deletes
// done directly in batches of 4 (create and start 4, then delete 4 old ones); it also
// reports the daemon's own CPU time per replaced instance. Run with `make bench`.
func BenchmarkRollingRollout(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchRollout(b, 20, 4)
	}
}

// cpuTime returns a process's user plus system CPU time from /proc.
func cpuTime(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(b, err)
	// Fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(data)[strings.LastIndexByte(string(data), ')')+2:])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

func benchRollout(b *testing.B, n int, surge int) {
	env := newGovernorEnv(b, 0, n+surge)
	env.scaleTo(b, n)
	env.updateShape(b, "", func(put *api.DeploymentShapePut) {
		setVersion("2")(put)
		put.Rollout = api.DeploymentShapeRollout{MaxSurge: api.RolloutCount(strconv.Itoa(surge)), MaxUnavailable: "0"}
	})

	// The daemon's CPU time while idle with the shape, for the same span, is what the
	// rollout costs nothing of (metrics, reconcile, the webhook sender).
	pid := env.d.cmd.Process.Pid
	idleFrom := cpuTime(b, pid)
	time.Sleep(5 * time.Second)
	idlePerSecond := float64(cpuTime(b, pid)-idleFrom) / 5
	cpuBefore := cpuTime(b, pid)
	start := time.Now()
	op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(b, err)
	must(b, op.Wait(context.Background()))
	ours := time.Since(start)
	cpu := cpuTime(b, pid) - cpuBefore
	must(b, env.admin.DeleteDeploymentShape("dep1", "web", true))

	// The same LXD work done directly, in the same batches.
	inParallel := func(names []string, f func(name string) error) {
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Add(1)
			go func(name string) {
				defer wg.Done()
				err := f(name)
				if err != nil {
					b.Error(err)
				}
			}(name)
		}

		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
	}

	create := func(name string) error { return launchDirect(env, name) }
	remove := func(name string) error { return stopAndDelete(env, name) }

	var old []string
	for i := 0; i < n; i++ {
		old = append(old, env.name(fmt.Sprintf("old%d", i)))
	}

	inParallel(old, create)
	var direct time.Duration
	for batch := 0; batch*surge < n; batch++ {
		var fresh []string
		for i := 0; i < surge; i++ {
			fresh = append(fresh, env.name(fmt.Sprintf("new%d", batch*surge+i)))
		}

		t0 := time.Now()
		inParallel(fresh, create)
		inParallel(old[batch*surge:min(n, (batch+1)*surge)], remove)
		direct += time.Since(t0)
	}

	ratio := float64(ours) / float64(direct)
	fmt.Printf("rolling rollout of %d busybox containers, max_surge %d, max_unavailable 0:\n", n, surge)
	fmt.Printf("  direct LXD client, batches of %d (create+start, then delete): %v\n", surge, direct.Round(time.Millisecond))
	fmt.Printf("  through a lxd-deployd rollout: %v (ratio %.3f)\n", ours.Round(time.Millisecond), ratio)
	idle := time.Duration(idlePerSecond * ours.Seconds())
	fmt.Printf("  daemon CPU time per replaced instance: %v (%v less its idle CPU over the same time)\n", (cpu / time.Duration(n)).Round(100*time.Microsecond), ((cpu - idle) / time.Duration(n)).Round(100*time.Microsecond))
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(cpu)/float64(n)/float64(time.Millisecond), "cpu-ms/instance")
	env.cleanupLXD(b)
}

// BenchmarkRolloutAtScale is issue 20's rollout and launch figures on a private LXD of its
// own, beside ROLLOUT_BENCH_BACKGROUND (default 0) busybox containers created directly in
// LXD in the same project (stopped; ROLLOUT_BENCH_BACKGROUND_RUNNING=1 then starts them, and
// the project's listing is timed both ways): what LXD renders for a listing grows with them. It prints LXD's own listings of the project and
// of the shape (filter=), ROLLOUT_BENCH_INSTANCES (default 100) concurrent launches
// through the governor API against the same creates and starts done directly, and a
// rolling rollout of them (max_surge ROLLOUT_BENCH_SURGE, default 10, max_unavailable 0)
// against the same LXD work done directly in batches; for each the CPU LXD spent and the
// requests the daemon made of LXD (through a counting socket in front of it). With
// ROLLOUT_BENCH_PROFILE=dir it keeps a CPU profile of the daemon during the launches and
// the rollout. ROLLOUT_BENCH_LAUNCH_ONLY=1 stops after the launches (a quick loop), and
// ROLLOUT_BENCH_PREFIX (default s23) names its containers and shape, so that two runs of it
// at once do not collide in the host's cgroup tree.
func BenchmarkRolloutAtScale(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchRolloutAtScale(b, envInt("ROLLOUT_BENCH_INSTANCES", 100), envInt("ROLLOUT_BENCH_SURGE", 10), envInt("ROLLOUT_BENCH_BACKGROUND", 0))
	}
}

func benchRolloutAtScale(b *testing.B, n int, surge int, background int) {
	// The shape's replacements are <prefix>web-r2-<hex>, unique to this benchmark in the
	// host's cgroup tree.
	prefix := cmp.Or(os.Getenv("ROLLOUT_BENCH_PREFIX"), "s23")
	rolloutBenchShape := prefix + "web"
	private := lxdtest.Start(b)
	counter := newLXDCounter(b, private.Socket)
	d := startDaemon(b, daemonOptions{LXDSocket: counter.Socket, ExtraArgs: []string{"--debug-pprof"}})
	waitLXDOnline(b, d)
	env := &governorEnv{d: d, lxd: private, lxdConn: private.Client(b), admin: d.Unix(b), prefix: prefix}
	b.Cleanup(func() { stopAll(env) })
	must(b, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(b, env.admin.CreateDeploymentShape("dep1", webShape(rolloutBenchShape, 0, n+surge)))
	env.gov = env.governor(b, "dep1", "gov", "admin")
	lxdPid := lxdDaemonPid(b, private.Dir)
	running := os.Getenv("ROLLOUT_BENCH_BACKGROUND_RUNNING") != ""
	start := time.Now()
	names := env.background(b, background)
	fmt.Printf("rollout at scale: %d background busybox containers made (stopped) in %v\n", background, time.Since(start).Round(time.Second))
	listProject := func() error {
		_, _, err := env.lxdConn.RawQuery("GET", "/1.0/instances?recursion=1", nil, "")
		return err
	}

	fmt.Printf("  LXD's recursion=1 listing of the project: %v\n", ms(timedRounds(b, 3, listProject)))
	if running {
		start = time.Now()
		slots := make(chan struct{}, 16)
		inParallel(b, names, func(name string) error {
			slots <- struct{}{}
			defer func() { <-slots }()
			op, err := env.lxdConn.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "start", Timeout: -1}, "")
			if err == nil {
				err = op.Wait()
			}

			return err
		})
		fmt.Printf("  started in %v; LXD's recursion=1 listing of the project now: %v\n", time.Since(start).Round(time.Second), ms(timedRounds(b, 3, listProject)))
	}

	// The launches: n at once directly, then n at once through the governor API.
	var old, ours []string
	for i := 0; i < n; i++ {
		old = append(old, env.name(fmt.Sprintf("old%d", i)))
		ours = append(ours, env.name(fmt.Sprintf("g%d", i)))
	}

	lxdBefore := processTreeCPU(b, lxdPid)
	directDone := &spread{start: time.Now()}
	directWall := inParallel(b, old, func(name string) error { return directDone.timed(launchDirect(env, name)) })
	directCPU := processTreeCPU(b, lxdPid) - lxdBefore
	counter.take()
	launchProfile := make(chan string, 1)
	if dir := os.Getenv("ROLLOUT_BENCH_PROFILE"); dir != "" {
		go func() {
			file, err := pprofFetch(d, "/debug/pprof/profile?seconds=5", dir, fmt.Sprintf("launch-%d-cpu.pprof", background))
			if err != nil {
				file = err.Error()
			}

			launchProfile <- file
		}()
	} else {
		launchProfile <- ""
	}

	// The governor reads the shape before it scales it, as `lxd-deploy governor run` does
	// (its TLS session is then resumed by the launches' new connections).
	_, _, err := env.gov.GetDeploymentShape("dep1", rolloutBenchShape)
	must(b, err)
	pid := d.cmd.Process.Pid
	cpuBefore := cpuTime(b, pid)
	lxdBefore = processTreeCPU(b, lxdPid)
	ourDone, ourAnswered := &spread{start: time.Now()}, &spread{start: time.Now()}
	ourWall := inParallel(b, ours, func(name string) error {
		op, err := env.gov.CreateDeploymentShapeInstance("dep1", rolloutBenchShape, name)
		err = ourAnswered.timed(err)
		if err == nil {
			err = op.Wait(context.Background())
		}

		return ourDone.timed(err)
	})
	ourCPU := processTreeCPU(b, lxdPid) - lxdBefore
	ourDaemonCPU := cpuTime(b, pid) - cpuBefore
	fmt.Printf("  %d concurrent launches (create+start busybox), wall time and LXD's CPU:\n", n)
	fmt.Printf("    directly against LXD: %v, LXD CPU %v\n", directWall.Round(time.Millisecond), directCPU)
	fmt.Printf("    through the governor API: %v, LXD CPU %v (ratio %.3f, goal <= 1.1); daemon CPU %v\n", ourWall.Round(time.Millisecond), ourCPU, float64(ourWall)/float64(directWall), ourDaemonCPU)
	fmt.Printf("    launches done after (directly): %s\n", directDone)
	fmt.Printf("    launches done after (governor API): %s; answered 202 after: %s\n", ourDone, ourAnswered)
	fmt.Printf("    requests to LXD through the governor API:\n")
	printCounts(counter.take(), "      ")
	b.ReportMetric(float64(ourWall)/float64(directWall), "launch-ratio")
	var after []string
	for i := 0; i < n; i++ {
		after = append(after, env.name(fmt.Sprintf("after%d", i)))
	}

	afterWall, afterCPU := launchAfter(b, env, lxdPid, after)
	printAfter(b, directWall, ourWall, afterWall, afterCPU)
	if file := <-launchProfile; file != "" {
		fmt.Printf("    CPU profile of the daemon over the first 5 s of the launches: %s\n", file)
		pprofTop(file, "-cum")
	}

	if os.Getenv("ROLLOUT_BENCH_LAUNCH_ONLY") != "" {
		return
	}

	filtered := timedRounds(b, 3, func() error {
		_, err := backend.ListShapeInstanceStatuses(backend.NewConn(env.lxdConn), "default", "dep1", rolloutBenchShape, nil)
		return err
	})
	fmt.Printf("  LXD's listing of the shape's %d (filter= on its keys): %v\n", n, ms(filtered))

	// The rollout, then the same LXD work directly.
	putShape(b, env, rolloutBenchShape, func(put *api.DeploymentShapePut) {
		setVersion("2")(put)
		put.Rollout = api.DeploymentShapeRollout{MaxSurge: api.RolloutCount(strconv.Itoa(surge)), MaxUnavailable: "0"}
	})

	profiled := make(chan string, 1)
	if dir := os.Getenv("ROLLOUT_BENCH_PROFILE"); dir != "" {
		go func() {
			file, err := pprofFetch(d, "/debug/pprof/profile?seconds=20", dir, fmt.Sprintf("rollout-%d-cpu.pprof", background))
			if err != nil {
				file = err.Error()
			}

			profiled <- file
		}()
	} else {
		profiled <- ""
	}

	counter.take()
	cpuBefore, lxdBefore = cpuTime(b, pid), processTreeCPU(b, lxdPid)
	start = time.Now()
	op, err := env.admin.CreateDeploymentShapeRollout("dep1", rolloutBenchShape, api.DeploymentRolloutsPost{})
	must(b, err)
	must(b, op.Wait(context.Background()))
	rollout := time.Since(start)
	daemonCPU, rolloutLXDCPU := cpuTime(b, pid)-cpuBefore, processTreeCPU(b, lxdPid)-lxdBefore
	requests := counter.take()
	lxdBefore = processTreeCPU(b, lxdPid)
	var direct time.Duration
	for batch := 0; batch*surge < n; batch++ {
		var fresh []string
		for i := 0; i < surge; i++ {
			fresh = append(fresh, env.name(fmt.Sprintf("n%d", batch*surge+i)))
		}

		direct += inParallel(b, fresh, func(name string) error { return launchDirect(env, name) })
		direct += inParallel(b, old[batch*surge:min(n, (batch+1)*surge)], func(name string) error { return stopAndDelete(env, name) })
	}

	directLXDCPU := processTreeCPU(b, lxdPid) - lxdBefore
	ratio := float64(rollout) / float64(direct)
	fmt.Printf("  rolling rollout of %d (max_surge %d, max_unavailable 0), wall time and LXD's CPU:\n", n, surge)
	fmt.Printf("    the same LXD work directly, batches of %d (create+start, then delete): %v, LXD CPU %v\n", surge, direct.Round(time.Millisecond), directLXDCPU)
	fmt.Printf("    through a lxd-deployd rollout: %v, LXD CPU %v (ratio %.3f, goal <= 1.15); daemon CPU %v\n", rollout.Round(time.Millisecond), rolloutLXDCPU, ratio, daemonCPU)
	fmt.Printf("    requests to LXD during the rollout:\n")
	printCounts(requests, "      ")
	b.ReportMetric(ratio, "rollout-ratio")
	if dir := os.Getenv("ROLLOUT_BENCH_PROFILE"); dir != "" {
		must(b, os.WriteFile(filepath.Join(dir, fmt.Sprintf("rollout-%d-daemon.log", background)), []byte(d.Log()), 0o644))
	}

	if file := <-profiled; file != "" {
		fmt.Printf("    CPU profile of the daemon over the first 20 s of the rollout: %s\n", file)
		pprofTop(file, "-cum")
	}
}

// background creates count busybox containers directly in LXD, 16 at a time, stopped, and
// returns their names.
func (env *governorEnv) background(b *testing.B, count int) []string {
	var names []string
	for i := 0; i < count; i++ {
		names = append(names, env.name(fmt.Sprintf("bg%d", i)))
	}

	slots := make(chan struct{}, 16)
	inParallel(b, names, func(name string) error {
		slots <- struct{}{}
		defer func() { <-slots }()
		op, err := env.lxdConn.CreateInstance(lxdapi.InstancesPost{Name: name, Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}})
		if err == nil {
			err = op.Wait()
		}

		return err
	})

	return names
}

// spread collects when each of concurrent calls ended, to print their spread: whether a
// ratio comes from every call being slower or from a tail.
type spread struct {
	start time.Time
	mu    sync.Mutex
	ends  []time.Duration
}

// timed records that a call ended now, and passes its error on.
func (s *spread) timed(err error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ends = append(s.ends, time.Since(s.start))
	return err
}

func (s *spread) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sorted := append([]time.Duration{}, s.ends...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i] < sorted[j] })
	if len(sorted) == 0 {
		return "none"
	}

	at := func(q float64) time.Duration {
		return sorted[int(q*float64(len(sorted)-1))].Round(10 * time.Millisecond)
	}
	return fmt.Sprintf("min %v, p10 %v, p50 %v, p90 %v, max %v", at(0), at(0.1), at(0.5), at(0.9), at(1))
}

// printAfter prints the daemon's launches against the mean of the same direct launches
// done before and after them (before, ours, after: ABA), beside the ratio against the
// direct run before only: LXD slows as it holds more instances, and the daemon's launches
// always ran second, beside the 100 more the direct run made.
func printAfter(b *testing.B, before time.Duration, ours time.Duration, after time.Duration, lxdAfter time.Duration) {
	mean := (before + after) / 2
	fmt.Printf("    directly again after them: %v, LXD CPU %v; through the governor API against the mean of before and after: ratio %.3f\n", after.Round(time.Millisecond), lxdAfter, float64(ours)/float64(mean))
	b.ReportMetric(float64(ours)/float64(mean), "launch-ratio-aba")
}

// launchAfter launches names directly, all at once, and returns the wall time and the CPU
// LXD spent: the third leg of the launches' ABA.
func launchAfter(b *testing.B, env *governorEnv, lxdPid int, names []string) (time.Duration, time.Duration) {
	lxdBefore := processTreeCPU(b, lxdPid)
	wall := inParallel(b, names, func(name string) error { return launchDirect(env, name) })
	return wall, processTreeCPU(b, lxdPid) - lxdBefore
}
