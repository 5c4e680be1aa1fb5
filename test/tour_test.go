package test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/internal/privatelxd"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// readmeTour returns the shell block of README.md's tour (after "<!-- tour -->"), so that
// the README cannot rot.
func readmeTour(t *testing.T) string {
	t.Helper()
	readme, err := os.ReadFile("../README.md")
	must(t, err)
	_, rest, found := strings.Cut(string(readme), "<!-- tour -->\n```sh\n")
	if !found {
		t.Fatal("README.md has no <!-- tour --> sh block")
	}

	block, _, found := strings.Cut(rest, "\n```")
	if !found {
		t.Fatal("README.md's tour block is not closed")
	}

	return block + "\n"
}

// TestReadmeTour runs README.md's tour as a new user would on a fresh machine: the daemon as
// `make run` starts it (no LXD answering, so its own private LXD under .run/lxd), then the
// tour's commands as written, in bash, from the directory holding bin/ and .run/. The
// daemon and the tour share a network namespace of their own, so the tour's fixed ports
// (8444, 9000) are free and nothing leaves loopback.
func TestReadmeTour(t *testing.T) {
	t.Parallel()
	if reason, ok := lxdtest.Available(); !ok {
		if os.Getenv("LXDTEST_REQUIRE") != "" {
			t.Fatalf("the tour needs a private LXD: %s", reason)
		}

		t.Skipf("the tour needs a private LXD: %s", reason)
	}

	for _, socket := range []string{"/var/snap/lxd/common/lxd/unix.socket", "/var/lib/lxd/unix.socket"} {
		c, err := lxd.ConnectLXDUnix(socket, nil)
		if err == nil {
			c.Disconnect()
			t.Skipf("a real LXD answers at %s: the tour would use it (a real LXD always wins) and leave instances there", socket)
		}
	}

	// A checkout under a directory others may not traverse, as root's home (mode 0700) or
	// `mktemp -d` is: the containers' unprivileged root cannot reach a private LXD kept
	// under it, so the daemon keeps it under privatelxd.RelocatedRoot, linked from .run/lxd.
	home, err := os.MkdirTemp("", "ldd-tour-home-")
	must(t, err)
	info, err := os.Stat(home)
	must(t, err)
	if info.Mode().Perm()&0o001 != 0 {
		t.Fatalf("%s has mode %04o: the tour must run under a directory others cannot traverse", home, info.Mode().Perm())
	}

	dir := filepath.Join(home, "lxd-deployd")
	must(t, os.Mkdir(dir, 0o755))
	runDir := filepath.Join(dir, ".run")
	t.Cleanup(func() {
		err := privatelxd.Remove(filepath.Join(runDir, "lxd"))
		if err != nil {
			t.Errorf("remove the private LXD: %v", err)
		}

		_ = os.RemoveAll(home)
	})

	must(t, os.Mkdir(filepath.Join(dir, "bin"), 0o755))
	must(t, os.Symlink(daemonBinary, filepath.Join(dir, "bin", "lxd-deployd")))
	must(t, os.Symlink(cliBinary, filepath.Join(dir, "bin", "lxd-deploy")))
	must(t, os.Mkdir(runDir, 0o711))

	// What `make run` runs, in a network namespace of its own with loopback up.
	logPath := filepath.Join(dir, "daemon.log")
	logFile, err := os.Create(logPath)
	must(t, err)
	daemonCmd := exec.Command("unshare", "--net", "sh", "-c", `ip link set lo up && exec "$0" "$@"`,
		filepath.Join(dir, "bin", "lxd-deployd"), "--private-lxd="+filepath.Join(runDir, "lxd"), "--lxd-socket", filepath.Join(dir, "no-lxd.socket"), "--debug")
	daemonCmd.Dir = dir
	daemonCmd.Env = append(os.Environ(), "LXD_DEPLOYD_DIR="+runDir, "LXD_DIR=")
	daemonCmd.Stdout, daemonCmd.Stderr = logFile, logFile
	daemonCmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	must(t, daemonCmd.Start())
	_ = logFile.Close()
	stopped := false
	stop := func() {
		if stopped {
			return
		}

		stopped = true
		_ = daemonCmd.Process.Signal(syscall.SIGTERM)
		_ = daemonCmd.Wait()
	}

	t.Cleanup(stop)
	daemonLog := func() string {
		data, _ := os.ReadFile(logPath)
		return string(data)
	}

	admin, err := client.ConnectUnix(filepath.Join(runDir, "unix.socket"), nil)
	must(t, err)
	var out []byte

	phase(t, "the daemon up with its private LXD", func(t *testing.T) {
		// Wait until it answers with LXD online (the private LXD starts before the API).
		waitUntil(t, "the daemon up with its private LXD", 90*time.Second, func() bool {
			server, _, err := admin.GetServer()
			if err == nil && server.Environment != nil && server.Environment.LXDStatus == "online" {
				lxdDir, err := filepath.EvalSymlinks(filepath.Join(runDir, "lxd"))
				must(t, err)
				if !server.Environment.LXDPrivate || server.Environment.LXDSocket != filepath.Join(lxdDir, "unix.socket") {
					t.Fatalf("GET /1.0 does not say the LXD is the private one in %s: %+v", lxdDir, server.Environment)
				}

				if filepath.Dir(lxdDir) != privatelxd.RelocatedRoot {
					t.Fatalf("the private LXD lives in %s, which containers cannot reach: want it under %s", lxdDir, privatelxd.RelocatedRoot)
				}

				return true
			}

			return false
		}, every(100*time.Millisecond), withLog(daemonLog))

		if strings.Count(daemonLog(), "running a private LXD") != 1 || !strings.Contains(daemonLog(), "the private LXD lives in "+privatelxd.RelocatedRoot) {
			t.Fatalf("the daemon does not say once that it runs a private LXD, and where:\n%s", daemonLog())
		}
	})

	phase(t, "the README tour", func(t *testing.T) {
		// The tour, as written, in the daemon's network namespace; aliases as in a terminal.
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		tour := exec.CommandContext(ctx, "nsenter", fmt.Sprintf("--net=/proc/%d/ns/net", daemonCmd.Process.Pid), "bash", "-e", "-c", "shopt -s expand_aliases\n"+readmeTour(t))
		tour.Dir = dir
		tour.Env = append(os.Environ(), "LXD_DEPLOY_CONF="+filepath.Join(dir, "conf"), "HOME="+dir)
		// On a timeout the whole tour goes, the governor it left in the background included.
		tour.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		tour.Cancel = func() error { return syscall.Kill(-tour.Process.Pid, syscall.SIGKILL) }
		tour.WaitDelay = 5 * time.Second
		var err error
		out, err = tour.CombinedOutput()
		if err != nil {
			t.Fatalf("the README tour failed: %v\n%s\ndaemon log:\n%s", err, out, daemonLog())
		}

		if !strings.Contains(string(out), "at its scaling minimum") || !strings.Contains(string(out), "action=scale-up") {
			t.Fatalf("the tour did not show the refused delete and the governor's scale up:\n%s", out)
		}
	})

	phase(t, "what the tour did", func(t *testing.T) {
		// What the tour did: two running instances of web, the second launched by the governor
		// (its launch finishes in the daemon even though the tour stopped the governor).
		var instances []api.DeploymentInstance
		running := 0
		waitUntil(t, "two running instances after the tour", 60*time.Second, func() bool {
			var err error
			instances, err = admin.GetDeploymentShapeInstances("dep1", "web")
			must(t, err)
			running = 0
			for _, instance := range instances {
				if instance.Status == "Running" && instance.State == "created" {
					running++
				}
			}

			return running == 2
		}, showing(func() string { return fmt.Sprintf("%d running instances: %+v\noutput:\n%s", running, instances, out) }))

		// LXD itself runs them, the one the tour launched by hand among them.
		lxdConn, err := lxd.ConnectLXDUnix(filepath.Join(runDir, "lxd", "unix.socket"), nil)
		must(t, err)
		lxdInstances, err := lxdConn.GetInstances(lxdapi.InstanceTypeAny)
		lxdConn.Disconnect()
		must(t, err)
		held := map[string]string{}
		for _, instance := range lxdInstances {
			if instance.Config["user.lxd-deployd.deployment"] == "dep1" {
				held[instance.Name] = instance.Status
			}
		}

		if len(held) != 2 || held["web1"] != "Running" {
			t.Fatalf("LXD holds %v of dep1, want web1 and the governor's instance, running\noutput:\n%s", held, out)
		}
	})

	phase(t, "the private LXD stops with the daemon", func(t *testing.T) {
		// On exit the daemon stops its private LXD, and the next run starts it again.
		stop()
		c, err := lxd.ConnectLXDUnix(filepath.Join(runDir, "lxd", "unix.socket"), nil)
		if err == nil {
			c.Disconnect()
			t.Fatalf("the private LXD still answers after the daemon stopped:\n%s", daemonLog())
		}
	})
}
