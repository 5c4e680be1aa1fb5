// Package lxdtest starts private, throwaway LXD daemons for end-to-end tests.
//
// Each daemon lives in its own fresh LXD_DIR under /tmp, listens only on its
// own unix socket, has a "dir" storage pool named "default" wired into the
// default profile, has no network, and carries one image: a tiny
// busybox-static container image with the alias "busybox" (see [Image]).
// Nothing is shared with any other LXD on the machine.
//
// Use [Start] when a test wants a daemon of its own (it changes server-wide
// state such as profiles, pools or config, or needs a pristine server).
// Use [Shared] when tests only create their own, uniquely named instances:
// it leases a daemon from a small pool started on first use and kept for the
// test binary, which saves a daemon start per test, and gives tests running
// in parallel one each. A package that uses [Shared] must stop the pool from
// TestMain:
//
//	func TestMain(m *testing.M) {
//		code := m.Run()
//		lxdtest.StopShared()
//		os.Exit(code)
//	}
//
// Both skip the test when a private LXD cannot be started here (see
// [Available]); set LXDTEST_REQUIRE=1 to make that a failure instead.
package lxdtest

import (
	"os"
	"os/exec"
	"testing"

	lxd "github.com/canonical/lxd/client"

	"github.com/lxd-deployd/lxd-deployd/internal/privatelxd"
)

// Image is the alias of the busybox image imported into every daemon.
// Its containers reach Running in well under a second, idle until stopped,
// and exit promptly on a clean `stop` (SIGPWR).
const Image = privatelxd.Image

// Pool is the name of the "dir" storage pool used by the default profile.
const Pool = privatelxd.Pool

// requireEnv turns "not available" from a skip into a failure.
const requireEnv = "LXDTEST_REQUIRE"

// LXD is one private LXD daemon (see internal/privatelxd, which does the work; this
// package ties it to tests).
type LXD struct {
	Dir    string // LXD_DIR: all of the daemon's state lives here
	Socket string // Dir + "/unix.socket"

	p *privatelxd.LXD
}

// launch starts a private daemon in a fresh temporary directory.
func launch() (*LXD, error) {
	p, err := privatelxd.Launch(privatelxd.Options{})
	if err != nil {
		return nil, err
	}

	return &LXD{Dir: p.Dir, Socket: p.Socket, p: p}, nil
}

// Start launches a private LXD daemon under a fresh temp dir (LXD_DIR),
// initialises a "dir" storage pool named "default" wired into the default
// profile's root disk, no network, imports the busybox image with alias
// "busybox", and returns once it answers.
//
// Cleanup (t.Cleanup) force-stops any instances, shuts the daemon down
// (`lxd shutdown`, then SIGTERM, then SIGKILL), kills any container process
// left behind, unmounts anything left mounted under the dir, and removes it.
//
// The test is skipped if [Available] says no.
func Start(t testing.TB) *LXD {
	t.Helper()
	skipUnlessAvailable(t)
	l, err := launch()
	if err != nil {
		t.Fatalf("lxdtest: %v", err)
	}
	t.Cleanup(func() {
		if err := l.p.Stop(); err != nil {
			t.Errorf("lxdtest: cleanup of %s: %v", l.Dir, err)
		}
	})
	return l
}

// Client returns a new client connected to the daemon's unix socket.
func (l *LXD) Client(t testing.TB) lxd.InstanceServer {
	t.Helper()
	c, err := lxd.ConnectLXDUnix(l.Socket, nil)
	if err != nil {
		t.Fatalf("lxdtest: connect to %s: %v", l.Socket, err)
	}
	return c
}

// Lxc runs the `lxc` command line client against the daemon (LXD_DIR set to
// l.Dir, client config kept under l.Dir) and returns its combined output.
// It fails the test if lxc fails.
func (l *LXD) Lxc(t testing.TB, args ...string) string {
	t.Helper()
	cmd := exec.Command("lxc", args...)
	cmd.Env = l.p.Env(true)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("lxdtest: lxc %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// Available reports whether a private LXD can be started here, and if not,
// why (see privatelxd.Available).
func Available() (reason string, ok bool) {
	return privatelxd.Available()
}

func skipUnlessAvailable(t testing.TB) {
	t.Helper()
	reason, ok := Available()
	if ok {
		return
	}
	if os.Getenv(requireEnv) != "" {
		t.Fatalf("lxdtest: private LXD unavailable (%s=%s): %s", requireEnv, os.Getenv(requireEnv), reason)
	}
	t.Skipf("lxdtest: private LXD unavailable: %s", reason)
}
