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
// it starts one daemon per test binary on first use, which saves a daemon
// start per test. A package that uses [Shared] must stop it from TestMain:
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
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"testing"

	lxd "github.com/canonical/lxd/client"
)

// Image is the alias of the busybox image imported into every daemon.
// Its containers reach Running in well under a second, idle until stopped,
// and exit promptly on a clean `stop` (SIGPWR).
const Image = "busybox"

// Pool is the name of the "dir" storage pool used by the default profile.
const Pool = "default"

// requireEnv turns "not available" from a skip into a failure.
const requireEnv = "LXDTEST_REQUIRE"

// LXD is one private LXD daemon.
type LXD struct {
	Dir    string // LXD_DIR: all of the daemon's state lives here
	Socket string // Dir + "/unix.socket"

	d *daemon
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
		if err := l.d.stop(); err != nil {
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
	cmd.Env = l.d.env(true)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("lxdtest: lxc %q: %v\n%s", args, err, out)
	}
	return string(out)
}

// Available reports whether a private LXD can be started here, and if not,
// why. It needs Linux, root, the `lxd` and `lxc` binaries on PATH (Debian:
// apt-get install lxd) and a statically linked busybox (Debian: apt-get
// install busybox-static) to build the container image from.
func Available() (reason string, ok bool) {
	if runtime.GOOS != "linux" {
		return "LXD needs Linux", false
	}
	if os.Geteuid() != 0 {
		return "starting a private LXD daemon needs root", false
	}
	for _, bin := range []string{"lxd", "lxc"} {
		if _, err := exec.LookPath(bin); err != nil {
			return fmt.Sprintf("%q binary not found on PATH (apt-get install lxd)", bin), false
		}
	}
	if _, err := findBusybox(); err != nil {
		return err.Error(), false
	}
	return "", true
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

// findBusybox returns the path of a statically linked busybox. A dynamic
// one would not run inside the otherwise empty image.
func findBusybox() (string, error) {
	candidates := []string{"/bin/busybox", "/usr/bin/busybox"}
	if p, err := exec.LookPath("busybox"); err == nil {
		candidates = append([]string{p}, candidates...)
	}
	found := ""
	for _, p := range candidates {
		f, err := elf.Open(p)
		if err != nil {
			continue
		}
		static := true
		for _, prog := range f.Progs {
			if prog.Type == elf.PT_INTERP {
				static = false
			}
		}
		f.Close()
		if static {
			return p, nil
		}
		found = p
	}
	if found != "" {
		return "", fmt.Errorf("busybox at %s is dynamically linked (apt-get install busybox-static)", found)
	}
	return "", fmt.Errorf("static busybox not found (apt-get install busybox-static)")
}
