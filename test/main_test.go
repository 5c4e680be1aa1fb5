// Package test holds the end-to-end suites: they build the real binaries, start
// lxd-deployd with a temporary data directory, and drive it over its unix socket and over
// HTTPS with real client certificates.
//
// The helpers the suites share live in one file per topic, helpers_<topic>_test.go (as
// canonical/lxd keeps test/includes/*.sh), and a suite file holds tests and the helpers
// only it uses:
//   - wait: waitUntil, the one way to wait for something (every, showing, withLog)
//   - check: must, expectCode, contains, and phase for the named phases of long scenarios
//   - daemon: startDaemon and the daemon's methods, identities, LXD's own client
//   - governor: governorEnv (a daemon on the shared private LXD with dep1/web and governor
//     keys) and its methods; governor_lxd, governor_images and governor_rollout hold its
//     methods that act on LXD, publish images and follow rollouts
//   - shapes, lxd, cli, webhook, metrics, cluster, bench: the rest, by what they serve
//
// Tests assert on what LXD itself holds, not only on the daemon's records.
//
// Parallel runs: a test opts in with t.Parallel() as its first line, and should, unless a
// resource below forces it to stay serial. Every daemon has its own data directory and
// ports; lxdtest.Shared (what newGovernorEnv uses) leases each running test an LXD of its
// own from a small pool (LXDTEST_SHARED_POOL, default 3), so tests on the shared LXD do not
// see each other's instances, images or deployments; TestMain runs defaultParallel tests at
// once unless -parallel says otherwise. Serial tests run first, alone, then the parallel
// ones together; but the serial suites named in lanes (lanes_test.go) run one after another
// in copies of the test binary of their own, beside this process's tests, so that they
// overlap the parallel phase instead of adding to it, and those named in alone run first,
// by themselves. A test that restarts, kills, freezes or slows an LXD runs in parallel too
// when that LXD is its own (lxdtest.Start, as the fail-safe suites do): nothing else talks
// to it, and its stop ends no thread that forked another test's processes (Pdeathsig; see
// internal/privatelxd's start). A test stays serial (no t.Parallel) when it:
//   - changes process-wide state (umask, environment, working directory: t.Setenv panics
//     in a parallel test anyway);
//   - asserts on timing (a state within a second, a stop within 10 s, fixed sleeps between
//     a kill and a check), which a busy 2-core machine can stretch: the dqlite cluster
//     tests, the browser suite;
//   - needs the machine's CPU to itself (the autoscaling suite's instances must burn
//     enough CPU to cross the governor's target);
//   - forms a private LXD cluster (lxdtest.StartCluster: three LXDs and member-loss
//     timings) or otherwise needs most of the machine.
//
// Timeouts of waits are never shortened to make a suite faster.
package test

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// binaries built once per test run.
var (
	daemonBinary string
	cliBinary    string
)

// defaultParallel is how many parallel tests run at once when -parallel is not given
// (go test's default is GOMAXPROCS, 2 here). The suites mostly wait on LXD and on the
// daemons' loops, so on 2 cores three tests on their own LXDs and one more (without LXD,
// or waiting for one) keep the machine busy; each parallel test then takes 1.5-2x its
// serial time, and the parallel part of ./test about 45% of its serial sum (issue 34).
const defaultParallel = 4

// parallelBesideLanes is defaultParallel while lanes run (lanes_test.go): the lanes' two
// tests wait on timers (0.15-0.2 of a core each) that a busier machine stretches, and the
// parallel phase, bound by the CPU, loses little with one test fewer at once.
const parallelBesideLanes = 3

func TestMain(m *testing.M) {
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		_ = flag.Set("test.parallel", strconv.Itoa(defaultParallel))
	}

	// A copy of the binary that runInNetns starts uses its parent's binaries.
	dir := os.Getenv(builtBinariesEnv)
	if dir == "" {
		var err error
		dir, err = buildBinaries()
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}

	daemonBinary = filepath.Join(dir, "lxd-deployd")
	cliBinary = filepath.Join(dir, "lxd-deploy")
	running := startLanes(dir)
	if besideLanes(running) && !parallelSet {
		_ = flag.Set("test.parallel", strconv.Itoa(parallelBesideLanes))
	}

	code := m.Run()
	lxdtest.StopShared()
	if !finishLanes(running) && code == 0 {
		code = 1
	}

	if os.Getenv(builtBinariesEnv) == "" {
		_ = os.RemoveAll(dir)
	}

	os.Exit(code)
}

// builtBinariesEnv names the directory of the binaries TestMain built, for the copy of the
// test binary runInNetns starts, so that it does not build them again.
const builtBinariesEnv = "LXD_DEPLOYD_TEST_BINARIES"

// buildBinaries builds the daemon and the CLI, at once, into a new directory. The CLI is
// built as `make build` builds it, without cgo: what users run, and what
// TestCLIBuildsWithoutCgo and the static binaries pushed into containers build again from
// the same cache.
func buildBinaries() (string, error) {
	dir, err := os.MkdirTemp("", "lxd-deployd-bin-")
	if err != nil {
		return "", err
	}

	errs := make(chan error, 2)
	for binary, pkg := range map[string]string{"lxd-deployd": "../lxd-deployd", "lxd-deploy": "../cli"} {
		go func() {
			build := exec.Command("go", "build", "-o", filepath.Join(dir, binary), pkg)
			if pkg == "../cli" {
				build.Env = append(os.Environ(), "CGO_ENABLED=0")
			}

			out, err := build.CombinedOutput()
			if err != nil {
				err = fmt.Errorf("build %s: %v\n%s", pkg, err, out)
			}

			errs <- err
		}()
	}

	for range 2 {
		if err := <-errs; err != nil {
			_ = os.RemoveAll(dir)
			return "", err
		}
	}

	return dir, nil
}
