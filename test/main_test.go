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
package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// binaries built once per test run.
var (
	daemonBinary string
	cliBinary    string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lxd-deployd-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	daemonBinary = filepath.Join(dir, "lxd-deployd")
	cliBinary = filepath.Join(dir, "lxd-deploy")
	for binary, pkg := range map[string]string{daemonBinary: "../lxd-deployd", cliBinary: "../cli"} {
		build := exec.Command("go", "build", "-o", binary, pkg)
		build.Stdout = os.Stderr
		build.Stderr = os.Stderr
		err = build.Run()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", pkg, err)
			os.Exit(1)
		}
	}

	code := m.Run()
	lxdtest.StopShared()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
