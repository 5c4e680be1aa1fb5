package test

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
)

// lanes are the serial suites that must not overlap each other but do not need the
// machine to themselves: each lane's tests run one after another in a copy of this test
// binary of its own (its own process, so its own umask, environment, file table and
// lxdtest.Shared LXD), beside the tests of this process and the other lanes. On 2 cores
// the serial suites took ~570 s one after another before the parallel ones (issue 34); in
// two lanes beside the parallel phase they take about as long as it does (each lane used
// 80-120 s of CPU). On a shared machine (2026-11-28) every lane test passed beside
// parallel suites at load 8-40; at load 50-85 some failed on timing, as did parallel
// suites and the autoscaling suite alone: their waits allow for a busy machine, not for
// that one.
//
// A test that needs the machine's CPU to itself is in alone instead. Cheap serial tests
// that change or measure this process (TestDaemonFilesUnderALooseUmask, TestWaitUntil)
// stay in its serial phase. A test named here that no longer exists changes nothing; a test
// not named here runs as it says (t.Parallel or not).
var lanes = [][]string{
	// dqlite clusters of daemons: elections, leases and claims run on timers.
	{
		"TestFailSafeDaemonPartition",
		"TestRolloutTakenOverAfterKill",
		"TestClusterFailover",
		"TestClusterMembers",
		"TestMemberCredentials",
		"TestClusterMemberWithoutQuorumStops",
		"TestScheduledActionsFireOnceInACluster",
		"TestAutohealingHolds",
		"TestOneActiveGovernor",
	},
	// private LXD clusters (three LXDs each), deadlines of custom rollouts, the browser,
	// the connection budgets and the rest that asserts on seconds.
	{
		"TestLXDClusterDrainAndRebalance",
		"TestLXDClusterMemberLossHealedWithinBounds",
		"TestLXDClusterLocationAndMemberLoss",
		"TestLXDClusterDrainFrontDoor",
		"TestFailSafeClusterGroupFresh",
		"TestRolloutCustomFailures",
		"TestRolloutCustomSurvivesRestart",
		"TestTrustedAndSessionsHaveTheirOwnBudget",
		"TestResizeHostileCPUSet",
		"TestUIBrowser",
	},
}

// alone are the tests that need the machine to themselves: they run first, in a copy of
// the test binary, before anything else of this package starts (the lanes and this
// process's tests wait for them). The autoscaling suite's instances must get the CPU they
// burn to cross the governor's target: at load 50-85 on a shared machine they got 0.07 of a
// core each, under the target of 0.25.
//
// The connection budget's check that at most 16 of one address's untrusted connections
// are open counts them right after 600 were opened: a daemon short of CPU has not closed
// the ones over budget yet (17 open, beside the lanes at load 50).
var alone = []string{"TestReferenceGovernorAutoscales", "TestUntrustedCertificateCannotExhaustConnections"}

// laneEnv names the lane a copy of the test binary runs ("list" for the copy that lists
// the tests): a copy starts no lanes of its own.
const laneEnv = "LXD_DEPLOYD_TEST_LANE"

// lanesOffEnv=0 runs every test in this process, serial ones alone, as go test does.
const lanesOffEnv = "LXDTEST_LANES"

// laneRun is a lane's copy of the test binary.
type laneRun struct {
	name  string // "lane 1 of 2", "alone, first"
	alone bool   // run before this process's tests, not beside them
	tests []string
	out   bytes.Buffer
	began time.Time
	took  time.Duration
	cpu   time.Duration // the copy's and its waited-for children's (daemons, LXDs)
	err   error
	done  chan struct{}
}

// startLanes runs the alone tests this run selects in a copy of the test binary and waits
// for it, then starts a copy per lane that has tests this run selects, tells this process
// to skip them all, and returns the copies; nil when the run is not one of several groups
// of tests (a -run naming one test, a subtest, benchmarks) or lanes are off. binaries is
// the directory of the binaries TestMain built, for the copies to use.
func startLanes(binaries string) []*laneRun {
	if os.Getenv(laneEnv) != "" || os.Getenv(netnsChildEnv) != "" || os.Getenv(lanesOffEnv) == "0" {
		return nil
	}

	run, skip := flagValue("test.run"), flagValue("test.skip")
	if skip != "" || flagValue("test.list") != "" || flagValue("test.bench") != "" || strings.Contains(run, "/") {
		return nil
	}

	if run == "" {
		run = "."
	}

	selected, err := listTests(run, binaries)
	if err != nil {
		fmt.Fprintf(os.Stderr, "lanes: %v; every test runs in this process\n", err)
		return nil
	}

	// The alone and lanes' tests this run selects, and whether anything is left for this
	// process.
	var picked [][]string
	inLanes := map[string]bool{}
	for _, lane := range append([][]string{alone}, lanes...) {
		var tests []string
		for _, name := range lane {
			if selected[name] && !inLanes[name] {
				tests = append(tests, name)
				inLanes[name] = true
			}
		}

		picked = append(picked, tests)
	}

	groups := 0
	if len(selected) > len(inLanes) {
		groups++ // this process's
	}

	for _, tests := range picked {
		if len(tests) > 0 {
			groups++
		}
	}

	if groups < 2 {
		return nil // one group of tests: nothing to run beside it or after it
	}

	var all []string
	for _, tests := range picked {
		all = append(all, tests...)
	}

	if err := flag.Set("test.skip", exactNames(all)); err != nil {
		fmt.Fprintf(os.Stderr, "lanes: %v; every test runs in this process\n", err)
		return nil
	}

	var runs []*laneRun
	if first := picked[0]; len(first) > 0 {
		l := &laneRun{name: "alone, first", alone: true, tests: first, done: make(chan struct{})}
		l.start(binaries)
		<-l.done
		runs = append(runs, l)
	}

	for i, tests := range picked[1:] {
		if len(tests) == 0 {
			continue
		}

		l := &laneRun{name: fmt.Sprintf("lane %d of %d", i+1, len(lanes)), tests: tests, done: make(chan struct{})}
		l.start(binaries)
		runs = append(runs, l)
	}

	return runs
}

// start runs the lane's copy of the test binary with this run's flags, but for which
// tests it runs. The copy is started and waited for from a goroutine locked to its thread,
// and dies with this process (Pdeathsig): a thread that ends SIGKILLs what it started
// (see internal/privatelxd), and this one ends only after the copy has.
func (l *laneRun) start(binaries string) {
	args := []string{"-test.run=" + exactNames(l.tests)}
	flag.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "test.run", "test.skip", "test.list", "test.parallel", "test.testlogfile", "test.outputdir",
			"test.coverprofile", "test.cpuprofile", "test.memprofile", "test.blockprofile", "test.mutexprofile", "test.trace":
			return
		}

		args = append(args, "-"+f.Name+"="+f.Value.String())
	})

	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), laneEnv+"="+l.name, builtBinariesEnv+"="+binaries)
	cmd.Stdout, cmd.Stderr = &l.out, &l.out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	l.began = time.Now()
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		defer close(l.done)
		l.err = cmd.Run()
		l.took = time.Since(l.began)
		if s := cmd.ProcessState; s != nil {
			l.cpu = s.UserTime() + s.SystemTime()
		}
	}()
}

// besideLanes reports whether a lane runs beside this process's tests.
func besideLanes(runs []*laneRun) bool {
	return slices.ContainsFunc(runs, func(l *laneRun) bool { return !l.alone })
}

// finishLanes waits for the lanes, prints what each printed, and reports whether all
// passed.
func finishLanes(runs []*laneRun) bool {
	ok := true
	for _, l := range runs {
		<-l.done
		fmt.Printf("=== %s, in a copy of the test binary (%s): %s, CPU %s\n", l.name, strings.Join(l.tests, " "), l.took.Round(100*time.Millisecond), l.cpu.Round(100*time.Millisecond))
		_, _ = os.Stdout.Write(l.out.Bytes())
		if l.err != nil {
			fmt.Printf("%s: %v\n", l.name, l.err)
			ok = false
		}
	}

	return ok
}

// listTests returns the names of the tests that pattern selects, from a copy of the test
// binary run with -test.list.
func listTests(pattern, binaries string) (map[string]bool, error) {
	cmd := exec.Command(os.Args[0], "-test.list="+pattern)
	cmd.Env = append(os.Environ(), laneEnv+"=list", builtBinariesEnv+"="+binaries)
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("list the tests: %v", err)
	}

	names := map[string]bool{}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(line, "Test") {
			names[strings.TrimSpace(line)] = true
		}
	}

	return names, nil
}

// exactNames is a -test.run or -test.skip pattern that matches exactly these top-level
// tests.
func exactNames(names []string) string {
	quoted := slices.Clone(names)
	for i, name := range quoted {
		quoted[i] = regexp.QuoteMeta(name)
	}

	return "^(" + strings.Join(quoted, "|") + ")$"
}

// flagValue is the value of a test flag, "" when it has none.
func flagValue(name string) string {
	if f := flag.Lookup(name); f != nil {
		return f.Value.String()
	}

	return ""
}
