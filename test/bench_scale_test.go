package test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// scaleShapes is how many shapes share the benchmark's instances, as issue 20 measured.
const scaleShapes = 4

// BenchmarkScale prints every figure of a daemon with many instances (issue 20's goals):
// SCALE_BENCH_INSTANCES (default 200; `make bench-1000` runs 1,000) busybox containers
// over 4 shapes on one daemon and a private LXD of the benchmark's own, each shape with an
// exec health check (`sh -c true`) every SCALE_BENCH_INTERVAL (default 10s). It prints:
// the daemon's CPU at rest over SCALE_BENCH_WINDOW (default 1m) and LXD's beside it (both
// from /proc, LXD's with its reaped forkexec children), the instances left without a
// fresh verdict, the daemon's RSS and RSS per 100 instances, listing a shape (recursion=1)
// against LXD's own recursion=1 listings while the checks run, /1.0/metrics, GET
// shapes?recursion=1, 100 concurrent launches through the governor API against the same
// creates and starts done directly, and a rolling rollout of 100 (max_surge 10) against the
// same LXD work done directly. With SCALE_BENCH_PROFILE=dir it also writes the daemon's
// heap profile and a CPU profile of 30 s at rest there (the daemon runs with
// --debug-pprof). SCALE_BENCH_REST_ONLY=1 stops after the reads. doc/health.md quotes the
// figures.
func BenchmarkScale(b *testing.B) {
	n := envInt("SCALE_BENCH_INSTANCES", 200)
	for i := 0; i < b.N; i++ {
		benchScale(b, n)
	}
}

// scaleBench is the state of one BenchmarkScale run.
type scaleBench struct {
	env      *governorEnv
	n        int
	interval time.Duration
	window   time.Duration
	shapes   []string
	pid      int
	lxdPid   int
}

func benchScale(b *testing.B, n int) {
	private := lxdtest.Start(b)
	d := startDaemon(b, daemonOptions{LXDSocket: private.Socket, ExtraArgs: []string{"--debug-pprof"}})
	waitLXDOnline(b, d)
	env := &governorEnv{d: d, lxd: private, lxdConn: private.Client(b), admin: d.Unix(b), prefix: "b20"}
	// Runs before the private LXD's own cleanup, whose shutdown takes longer than it waits
	// with a thousand instances running.
	b.Cleanup(func() { stopAll(env) })
	s := &scaleBench{
		env:      env,
		n:        n - n%scaleShapes,
		interval: envDuration("SCALE_BENCH_INTERVAL", 10*time.Second),
		window:   envDuration("SCALE_BENCH_WINDOW", time.Minute),
		pid:      d.cmd.Process.Pid,
		lxdPid:   lxdDaemonPid(b, private.Dir),
	}

	must(b, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	for i := 0; i < scaleShapes; i++ {
		name := fmt.Sprintf("b20s%d", i)
		s.shapes = append(s.shapes, name)
		must(b, env.admin.CreateDeploymentShape("dep1", webShape(name, 0, s.n/scaleShapes)))
	}

	must(b, env.admin.CreateDeploymentShape("dep1", webShape("b20roll", 0, 110)))
	env.gov = env.governor(b, "dep1", "gov", "admin")
	time.Sleep(5 * time.Second)
	rssEmpty := daemonRSS(b, d)

	start := time.Now()
	s.launchAll(b)
	fmt.Printf("scale bench: %d busybox instances over %d shapes, launched in %v (16 at a time); exec check `sh -c true` every %v\n", s.n, scaleShapes, time.Since(start).Round(time.Second), s.interval)

	// The daemon without checks, then with them: the window is what the goals are about.
	time.Sleep(10 * time.Second)
	quiet := s.cpuOver(b, 30*time.Second)
	rssQuiet := daemonRSS(b, d)
	s.checkAll(b)
	s.atRest(b, quiet, rssEmpty, rssQuiet)
	s.profile(b)
	s.reads(b)
	if os.Getenv("SCALE_BENCH_REST_ONLY") != "" {
		return // the figures at rest only (a shorter run)
	}

	s.ttlReports(b)
	old := s.launches(b)
	s.rollout(b, old)
}

// launchAll launches n instances over the shapes through the admin socket, 16 at a time.
func (s *scaleBench) launchAll(b *testing.B) {
	launchMany(b, s.env, s.n, func(i int) string { return s.shapes[i%scaleShapes] }, func(i int) string {
		shape := s.shapes[i%scaleShapes]
		return fmt.Sprintf("%s-%d", shape[3:], i)
	})
}

// cpuOver is the daemon's CPU time over d, as a share of one core.
func (s *scaleBench) cpuOver(b *testing.B, d time.Duration) float64 {
	before := cpuTime(b, s.pid)
	time.Sleep(d)
	return (cpuTime(b, s.pid) - before).Seconds() / d.Seconds()
}

// checkAll gives every shape its exec check and waits until every instance has a verdict
// (or a deadline: a checker that cannot keep up is measured anyway).
func (s *scaleBench) checkAll(b *testing.B) {
	for _, shape := range s.shapes {
		putShape(b, s.env, shape, func(put *api.DeploymentShapePut) {
			put.Health = &api.DeploymentShapeHealth{Command: []string{"sh", "-c", "true"}, Interval: s.interval.String(), Grace: "0s"}
		})
	}

	start := time.Now()
	deadline := start.Add(3*s.interval + time.Duration(s.n)*50*time.Millisecond)
	checked := 0
	poll(time.Until(deadline), func() bool {
		checked = 0
		for _, instance := range s.instances(b) {
			if instance.HealthCheck != nil && instance.HealthCheck.CheckedAt != nil {
				checked++
			}
		}

		return checked == s.n
	}, every(time.Second))

	fmt.Printf("  every instance had a verdict after %v (%d of %d)\n", time.Since(start).Round(time.Second), checked, s.n)
}

// instances lists every shape's instances.
func (s *scaleBench) instances(b *testing.B) []api.DeploymentInstance {
	var all []api.DeploymentInstance
	for _, shape := range s.shapes {
		listed, err := s.env.admin.GetDeploymentShapeInstances("dep1", shape)
		must(b, err)
		all = append(all, listed...)
	}

	return all
}

// atRest measures the window: the daemon's and LXD's CPU, the instances left without a
// fresh verdict, and memory.
func (s *scaleBench) atRest(b *testing.B, quiet float64, rssEmpty int64, rssQuiet int64) {
	ran := execChecksRun(scrape(b, s.env.admin))
	ours, theirs := cpuTime(b, s.pid), processTreeCPU(b, s.lxdPid)
	time.Sleep(s.window)
	ours, theirs = cpuTime(b, s.pid)-ours, processTreeCPU(b, s.lxdPid)-theirs
	end := time.Now()
	text := scrape(b, s.env.admin)
	ran = execChecksRun(text) - ran
	stale, last := 0, time.Duration(0)
	for _, instance := range s.instances(b) {
		if instance.HealthCheck == nil || instance.HealthCheck.CheckedAt == nil {
			stale++
			continue
		}

		age := end.Sub(*instance.HealthCheck.CheckedAt)
		last = max(last, age)
		if age > 2*s.interval {
			stale++
		}
	}

	checks := float64(s.n) * s.window.Seconds() / s.interval.Seconds()
	rss := daemonRSS(b, s.env.d)
	perHundred := float64(rss-rssEmpty) / float64(s.n) * 100
	fmt.Printf("  at rest over %v (%.0f checks/s):\n", s.window, checks/s.window.Seconds())
	fmt.Printf("    daemon CPU: %.1f%% of a core (goal <= 10%%); without checks: %.1f%%; %.2f ms per check\n", 100*ours.Seconds()/s.window.Seconds(), 100*quiet, float64(ours.Microseconds())/1000/checks)
	fmt.Printf("    LXD CPU beside it: %.1f%% of a core (%.2f ms per check)\n", 100*theirs.Seconds()/s.window.Seconds(), float64(theirs.Microseconds())/1000/checks)
	fmt.Printf("    instances without a verdict in the last two intervals: %d (goal 0); oldest verdict %v; batches of results the database refused: %d\n",
		stale, last.Round(100*time.Millisecond), strings.Count(s.env.d.Log(), "record health"))
	fmt.Printf("    exec checks run: %.1f a second (health_checks_total); overdue at the end: %.0f (health_checks_overdue)\n",
		ran/s.window.Seconds(), sample(text, `lxd_deployd_health_checks_overdue{kind="exec"}`))
	fmt.Printf("    daemon RSS: %.1f MiB (goal <= 100 MiB at 1,000); %.1f MiB with the shapes only, %.1f MiB with the instances before checks; %.2f MiB per 100 instances (goal <= 5)\n",
		mib(rss), mib(rssEmpty), mib(rssQuiet), perHundred/(1<<20))
	fmt.Printf("    LXD RSS: %.1f MiB\n", mib(processRSS(b, s.lxdPid)))
	fmt.Printf("    daemon memory: %s\n", readDaemonMemory(b, s.pid, scrape(b, s.env.admin)))
	b.ReportMetric(100*ours.Seconds()/s.window.Seconds(), "daemon-cpu-%")
	b.ReportMetric(100*theirs.Seconds()/s.window.Seconds(), "lxd-cpu-%")
	b.ReportMetric(float64(stale), "stale")
	b.ReportMetric(mib(rss), "rss-MiB")
}

// reads times the API's reads while the checks run: a shape's instances against LXD's
// own listings, the metrics scrape, the shapes.
func (s *scaleBench) reads(b *testing.B) {
	// LXD's own listing time moves by a third between rounds while the checks run: enough
	// rounds that the medians hold still.
	const rounds = 25
	shape := s.shapes[0]
	filter := []string{"config.user.lxd-deployd.shape=" + shape}
	var ours, project, filtered []time.Duration
	var fetchedIn []bool // a round in which the daemon fetched LXD's metrics for the usage
	filterErr := error(nil)
	lxdListsBefore := scrape(b, s.env.admin)
	fetches := usageFetches(lxdListsBefore)
	for i := 0; i < rounds; i++ {
		// Alternate so that any drift of the machine affects each alike.
		ours = append(ours, timed(b, func() error {
			listed, err := s.env.admin.GetDeploymentShapeInstances("dep1", shape)
			if err == nil && len(listed) != s.n/scaleShapes {
				err = fmt.Errorf("listed %d instances of %s, want %d", len(listed), shape, s.n/scaleShapes)
			}

			return err
		}))
		project = append(project, timed(b, func() error {
			_, err := s.env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
			return err
		}))
		if filterErr == nil {
			start := time.Now()
			var instances []lxdapi.Instance
			instances, filterErr = s.env.lxdConn.GetInstancesWithFilter(lxdapi.InstanceTypeAny, filter)
			if filterErr == nil && len(instances) != s.n/scaleShapes {
				filterErr = fmt.Errorf("LXD's filter gave %d instances", len(instances))
			}

			filtered = append(filtered, time.Since(start))
		}

		now := usageFetches(scrape(b, s.env.admin))
		fetchedIn = append(fetchedIn, now > fetches)
		fetches = now
	}

	lxdListsAfter := scrape(b, s.env.admin)
	sum := `lxd_deployd_lxd_call_duration_seconds_sum{kind="list"}`
	count := `lxd_deployd_lxd_call_duration_seconds_count{kind="list"}`
	lists := sample(lxdListsAfter, count) - sample(lxdListsBefore, count)
	perShape := s.n / scaleShapes
	fmt.Printf("  reads while the checks run (median of %d):\n", rounds)
	fmt.Printf("    list a shape of %d (recursion=1): %v\n", perShape, ms(median(ours)))
	if lists > 0 {
		// The daemon's own calls to LXD within those listings (a reconcile's listing may
		// fall among them): what LXD took to answer it, apart from the daemon's part.
		mean := time.Duration((sample(lxdListsAfter, sum) - sample(lxdListsBefore, sum)) / lists * float64(time.Second))
		fmt.Printf("      of which LXD's answer to the daemon (mean of %.0f calls): %v\n", lists, ms(mean))
	}
	fmt.Printf("      LXD's recursion=1 listing of the project (all %d): %v (ratio %.2f)\n", s.n+1, ms(median(project)), float64(median(ours))/float64(median(project)))
	if filterErr == nil {
		fmt.Printf("      LXD's recursion=1 listing of the same %d (filter on the shape key): %v (ratio %.2f, goal <= 1.2)\n", perShape, ms(median(filtered)), float64(median(ours))/float64(median(filtered)))
		b.ReportMetric(float64(median(ours))/float64(median(filtered)), "list-ratio")
	} else {
		fmt.Printf("      LXD's listing of the same %d: not measured (%v)\n", perShape, filterErr)
	}

	// Each round's pair, to tell a steady ratio from a few slow rounds on either side; a
	// star marks a round in which the daemon fetched LXD's /1.0/metrics (the usage).
	var pairs []string
	for i := range filtered {
		star := ""
		if fetchedIn[i] {
			star = "*"
		}

		pairs = append(pairs, fmt.Sprintf("%v/%v%s", ms(ours[i]), ms(filtered[i]), star))
	}

	if len(pairs) > 0 {
		fmt.Printf("      each round, ours/LXD's filtered (* LXD's metrics fetched): %s\n", strings.Join(pairs, " "))
	}

	s.profileListing(b, shape)
	metrics := timedRounds(b, 20, func() error { _, err := s.env.admin.GetMetrics(context.Background()); return err })
	shapes := timedRounds(b, 20, func() error { _, err := s.env.admin.GetDeploymentShapes("dep1"); return err })
	fmt.Printf("    /1.0/metrics: %v (goal <= 50 ms)\n", ms(metrics))
	fmt.Printf("    GET shapes?recursion=1 (%d shapes): %v (goal <= 20 ms)\n", scaleShapes+1, ms(shapes))
	b.ReportMetric(float64(median(ours))/float64(time.Millisecond), "list-ms")
	b.ReportMetric(float64(metrics)/float64(time.Millisecond), "metrics-ms")
	b.ReportMetric(float64(shapes)/float64(time.Millisecond), "shapes-ms")
}

// launches starts 100 instances directly in LXD, all at once, then 100 through the
// governor API (shape b20roll) the same way, while the checks run; it returns the names of
// the direct ones, the old instances of the direct rollout.
func (s *scaleBench) launches(b *testing.B) []string {
	const count = 100
	var direct, ours []string
	for i := 0; i < count; i++ {
		direct = append(direct, s.env.name(fmt.Sprintf("d%d", i)))
		ours = append(ours, s.env.name(fmt.Sprintf("g%d", i)))
	}

	directDone := &spread{start: time.Now()}
	lxdBefore, daemonBefore := processTreeCPU(b, s.lxdPid), cpuTime(b, s.pid)
	directWall := inParallel(b, direct, func(name string) error { return directDone.timed(launchDirect(s.env, name)) })
	directLXD, directDaemon := processTreeCPU(b, s.lxdPid)-lxdBefore, cpuTime(b, s.pid)-daemonBefore
	retries := sample(scrape(b, s.env.admin), "lxd_deployd_dqlite_transaction_retries_total")
	profiled := make(chan string, 1)
	if dir := os.Getenv("SCALE_BENCH_PROFILE"); dir != "" {
		go func() {
			file, err := pprofFetch(s.env.d, "/debug/pprof/profile?seconds=20", dir, fmt.Sprintf("scale-%d-launch-cpu.pprof", s.n))
			if err != nil {
				file = err.Error()
			}

			profiled <- file
		}()
	} else {
		profiled <- ""
	}

	// The governor reads the shape before it scales it, as `lxd-deploy governor run` does
	// (its TLS session is then resumed by the launches' new connections).
	_, _, err := s.env.gov.GetDeploymentShape("dep1", "b20roll")
	must(b, err)
	ourDone, ourAnswered := &spread{start: time.Now()}, &spread{start: time.Now()}
	lxdBefore, daemonBefore = processTreeCPU(b, s.lxdPid), cpuTime(b, s.pid)
	ourWall := inParallel(b, ours, func(name string) error {
		op, err := s.env.gov.CreateDeploymentShapeInstance("dep1", "b20roll", name)
		err = ourAnswered.timed(err)
		if err == nil {
			err = op.Wait(context.Background())
		}

		return ourDone.timed(err)
	})
	ourLXD, ourDaemon := processTreeCPU(b, s.lxdPid)-lxdBefore, cpuTime(b, s.pid)-daemonBefore

	ratio := float64(ourWall) / float64(directWall)
	fmt.Printf("  %d concurrent launches (create+start busybox), wall time:\n", count)
	fmt.Printf("    directly against LXD: %v\n", directWall.Round(time.Millisecond))
	fmt.Printf("    through the governor API: %v (ratio %.3f, goal <= 1.1); database transactions retried meanwhile: %.0f\n",
		ourWall.Round(time.Millisecond), ratio, sample(scrape(b, s.env.admin), "lxd_deployd_dqlite_transaction_retries_total")-retries)
	fmt.Printf("    CPU: directly LXD %v, daemon %v (its checks); through the governor API LXD %v, daemon %v\n", directLXD, directDaemon, ourLXD, ourDaemon)
	fmt.Printf("    launches done after: directly %s; through the governor API %s, answered 202 after %s\n", directDone, ourDone, ourAnswered)
	b.ReportMetric(ratio, "launch-ratio")
	var after []string
	for i := 0; i < count; i++ {
		after = append(after, s.env.name(fmt.Sprintf("a%d", i)))
	}

	afterWall, afterCPU := launchAfter(b, s.env, s.lxdPid, after)
	printAfter(b, directWall, ourWall, afterWall, afterCPU)
	if file := <-profiled; file != "" {
		fmt.Printf("    CPU profile of the first 20 s of the launches: %s\n", file)
		pprofTop(file, "-cum")
	}
	return direct
}

// rollout replaces shape b20roll's 100 instances with a rolling rollout (max_surge 10,
// max_unavailable 0), then does the same LXD work directly in batches of 10 (create and
// start 10 new, then delete 10 of old).
func (s *scaleBench) rollout(b *testing.B, old []string) {
	const surge = 10
	putShape(b, s.env, "b20roll", func(put *api.DeploymentShapePut) {
		setVersion("2")(put)
		put.Rollout = api.DeploymentShapeRollout{MaxSurge: api.RolloutCount(strconv.Itoa(surge)), MaxUnavailable: "0"}
	})

	start := time.Now()
	op, err := s.env.admin.CreateDeploymentShapeRollout("dep1", "b20roll", api.DeploymentRolloutsPost{})
	must(b, err)
	must(b, op.Wait(context.Background()))
	ours := time.Since(start)

	var direct time.Duration
	for batch := 0; batch*surge < len(old); batch++ {
		var fresh []string
		for i := 0; i < surge; i++ {
			fresh = append(fresh, s.env.name(fmt.Sprintf("n%d", batch*surge+i)))
		}

		direct += inParallel(b, fresh, func(name string) error { return launchDirect(s.env, name) })
		direct += inParallel(b, old[batch*surge:min(len(old), (batch+1)*surge)], func(name string) error { return stopAndDelete(s.env, name) })
	}

	ratio := float64(ours) / float64(direct)
	fmt.Printf("  rolling rollout of %d instances (max_surge %d, max_unavailable 0):\n", len(old), surge)
	fmt.Printf("    the same LXD work directly, batches of %d (create+start, then delete): %v\n", surge, direct.Round(time.Millisecond))
	fmt.Printf("    through a lxd-deployd rollout: %v (ratio %.3f, goal <= 1.15)\n", ours.Round(time.Millisecond), ratio)
	b.ReportMetric(ratio, "rollout-ratio")
}

// putShape changes a shape's writable fields through PUT.
func putShape(b *testing.B, env *governorEnv, shape string, change func(put *api.DeploymentShapePut)) {
	current, etag, err := env.admin.GetDeploymentShape("dep1", shape)
	must(b, err)
	put := current.Writable()
	change(&put)
	_, _, err = env.admin.Query("PUT", "/1.0/deployments/dep1/shapes/"+url.PathEscape(shape), put, etag)
	must(b, err)
}

// profile writes the daemon's heap profile and a CPU profile of 30 s at rest into
// SCALE_BENCH_PROFILE, when set, and prints the top of each.
func (s *scaleBench) profile(b *testing.B) {
	dir := os.Getenv("SCALE_BENCH_PROFILE")
	if dir == "" {
		return
	}

	prefix := fmt.Sprintf("scale-%d-", s.n)
	heap := pprofGet(b, s.env.d, "/debug/pprof/heap?gc=1", dir, prefix+"heap.pprof")
	fmt.Printf("  heap profile (in use): %s\n", heap)
	pprofTop(heap, "-sample_index=inuse_space")
	cpu := pprofGet(b, s.env.d, "/debug/pprof/profile?seconds=30", dir, prefix+"cpu.pprof")
	fmt.Printf("  CPU profile of 30 s at rest: %s\n", cpu)
	pprofTop(cpu)
}

// profileListing writes a CPU profile of 5 s of the daemon listing a shape over and over,
// when SCALE_BENCH_PROFILE is set, and prints its top.
func (s *scaleBench) profileListing(b *testing.B, shape string) {
	dir := os.Getenv("SCALE_BENCH_PROFILE")
	if dir == "" {
		return
	}

	type result struct {
		calls int
		err   error
	}

	done := make(chan result)
	go func() {
		var r result
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end) && r.err == nil; r.calls++ {
			_, r.err = s.env.admin.GetDeploymentShapeInstances("dep1", shape)
		}

		done <- r
	}()

	file := pprofGet(b, s.env.d, "/debug/pprof/profile?seconds=5", dir, fmt.Sprintf("scale-%d-list-cpu.pprof", s.n))
	r := <-done
	must(b, r.err)
	calls := r.calls
	fmt.Printf("    CPU profile of %d listings of %s: %s\n", calls, shape, file)
	pprofTop(file, "-cum")
}

// ttlReports switches the shapes to ttl checks (30s) and has every instance report every
// interval for 30 s, through the admin socket 32 at a time (instances report on their own,
// so reports arrive together and share a batch), to price a report: the daemon's CPU over
// those 30 s, and LXD's (nothing is asked of it).
func (s *scaleBench) ttlReports(b *testing.B) {
	for _, shape := range s.shapes {
		putShape(b, s.env, shape, func(put *api.DeploymentShapePut) {
			put.Health = &api.DeploymentShapeHealth{TTL: "30s", Grace: "0s"}
		})
	}

	var names [][2]string
	for _, instance := range s.instances(b) {
		names = append(names, [2]string{instance.Shape, instance.Name})
	}

	const span = 30 * time.Second
	ours, theirs := cpuTime(b, s.pid), processTreeCPU(b, s.lxdPid)
	start := time.Now()
	reports := 0
	for round := 0; time.Since(start) < span; round++ {
		next := start.Add(time.Duration(round+1) * s.interval)
		slots := make(chan struct{}, 32)
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Add(1)
			slots <- struct{}{}
			go func(shape string, instance string) {
				defer wg.Done()
				defer func() { <-slots }()
				err := s.env.admin.ReportDeploymentShapeInstanceHealth("dep1", shape, instance, api.DeploymentInstanceHealthPut{Status: api.HealthReportPassing})
				if err != nil {
					b.Error(err)
				}
			}(name[0], name[1])
		}

		wg.Wait()
		reports += len(names)
		time.Sleep(time.Until(next))
	}

	elapsed := time.Since(start)
	ours, theirs = cpuTime(b, s.pid)-ours, processTreeCPU(b, s.lxdPid)-theirs
	fmt.Printf("  ttl checks: %d reports in %v (%.0f a second): daemon CPU %.1f%% of a core (%.2f ms per report, its rest included); LXD CPU %.1f%%\n",
		reports, elapsed.Round(time.Second), float64(reports)/elapsed.Seconds(), 100*ours.Seconds()/elapsed.Seconds(), float64(ours.Microseconds())/1000/float64(reports), 100*theirs.Seconds()/elapsed.Seconds())
	b.ReportMetric(float64(ours.Microseconds())/1000/float64(reports), "ttl-ms/report")
	for _, shape := range s.shapes {
		putShape(b, s.env, shape, func(put *api.DeploymentShapePut) { put.Health = nil })
	}
}

// stopAll force-stops every instance of the private LXD, 32 at a time.
func stopAll(env *governorEnv) {
	instances, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
	if err != nil {
		return
	}

	var wg sync.WaitGroup
	slots := make(chan struct{}, 32)
	for _, instance := range instances {
		if instance.StatusCode == lxdapi.Stopped {
			continue
		}

		wg.Add(1)
		slots <- struct{}{}
		go func(name string) {
			defer wg.Done()
			defer func() { <-slots }()
			op, err := env.lxdConn.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
			if err == nil {
				_ = op.Wait()
			}
		}(instance.Name)
	}

	wg.Wait()
}

// usageFetches is how many times the daemon has fetched LXD's /1.0/metrics for listings,
// from a scrape of its metrics.
func usageFetches(text string) float64 {
	return sample(text, `lxd_deployd_lxd_calls_total{kind="metrics",result="ok"}`) + sample(text, `lxd_deployd_lxd_calls_total{kind="metrics",result="error"}`)
}
