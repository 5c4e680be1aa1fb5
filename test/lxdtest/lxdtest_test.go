package lxdtest_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

func TestMain(m *testing.M) {
	code := m.Run()
	lxdtest.StopShared()
	os.Exit(code)
}

func TestAvailable(t *testing.T) {
	reason, ok := lxdtest.Available()
	t.Logf("Available() = %q, %v", reason, ok)
	if !ok && os.Getenv("LXDTEST_REQUIRE") != "" {
		t.Fatalf("private LXD unavailable: %s", reason)
	}
}

// TestStart runs a container through its whole life on a private daemon.
func TestStart(t *testing.T) {
	start := time.Now()
	l := lxdtest.Start(t)
	t.Logf("Start took %v (LXD_DIR=%s)", time.Since(start), l.Dir)

	c := l.Client(t)
	server, _, err := c.GetServer()
	if err != nil {
		t.Fatalf("GetServer: %v", err)
	}
	if server.Environment.ServerVersion == "" {
		t.Errorf("GetServer returned no server version: %+v", server.Environment)
	}
	t.Logf("server version %s, storage %s", server.Environment.ServerVersion, server.Environment.Storage)

	start = time.Now()
	createAndStart(t, c, "c1")
	t.Logf("create+start took %v", time.Since(start))

	state, _, err := c.GetInstanceState("c1")
	if err != nil {
		t.Fatalf("GetInstanceState: %v", err)
	}
	if state.StatusCode != api.Running {
		t.Fatalf("c1 is %s, want Running", state.Status)
	}

	start = time.Now()
	if code, out := execIn(t, c, "c1", "true"); code != 0 {
		t.Fatalf("exec true: exit %d: %s", code, out)
	}
	if code, out := execIn(t, c, "c1", "sh", "-c", "echo hello from $(hostname)"); code != 0 || out != "hello from c1\n" {
		t.Fatalf("exec echo: exit %d, output %q", code, out)
	}
	t.Logf("2 execs took %v", time.Since(start))

	// A clean (non-forced) stop: init must react to SIGPWR.
	start = time.Now()
	op, err := c.UpdateInstanceState("c1", api.InstanceStatePut{Action: "stop", Timeout: 30}, "")
	if err != nil {
		t.Fatalf("stop c1: %v", err)
	}
	if err := op.Wait(); err != nil {
		t.Fatalf("stop c1: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("clean stop took %v, want a few seconds at most", d)
	} else {
		t.Logf("clean stop took %v", d)
	}

	op, err = c.DeleteInstance("c1")
	if err != nil {
		t.Fatalf("delete c1: %v", err)
	}
	if err := op.Wait(); err != nil {
		t.Fatalf("delete c1: %v", err)
	}
	if names, err := c.GetInstanceNames(api.InstanceTypeAny); err != nil || len(names) != 0 {
		t.Fatalf("instances after delete: %v, %v", names, err)
	}
}

// TestCleanup checks that a daemon with a container still running leaves
// nothing behind: no process, no mount, no directory.
func TestCleanup(t *testing.T) {
	var dir string
	t.Run("daemon", func(t *testing.T) {
		l := lxdtest.Start(t)
		dir = l.Dir
		createAndStart(t, l.Client(t), "left-running")
		if out := l.Lxc(t, "list", "--format=csv", "--columns=ns"); !strings.Contains(out, "left-running,RUNNING") {
			t.Fatalf("lxc list: %q", out)
		}
	})
	if dir == "" {
		t.Skip("daemon did not start")
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s still exists after cleanup (stat: %v)", dir, err)
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(mountinfo, []byte(dir)) {
		t.Errorf("mounts left under %s:\n%s", dir, mountinfo)
	}
}

// TestShared checks that Shared hands a test the same daemon each time it asks.
func TestShared(t *testing.T) {
	start := time.Now()
	l := lxdtest.Shared(t)
	t.Logf("first Shared took %v", time.Since(start))
	if again := lxdtest.Shared(t); again != l {
		t.Fatalf("Shared returned %p then %p", l, again)
	}
	if out := l.Lxc(t, "image", "list", "--format=csv", "--columns=l"); !strings.Contains(out, lxdtest.Image) {
		t.Fatalf("lxc image list: %q", out)
	}
	c := l.Client(t)
	createAndStart(t, c, "shared-c1")
	op, err := c.UpdateInstanceState("shared-c1", api.InstanceStatePut{Action: "stop", Force: true}, "")
	if err == nil {
		err = op.Wait()
	}
	if err != nil {
		t.Fatalf("stop: %v", err)
	}
	op, err = c.DeleteInstance("shared-c1")
	if err == nil {
		err = op.Wait()
	}
	if err != nil {
		t.Fatalf("delete: %v", err)
	}
}

func createAndStart(t *testing.T, c lxd.InstanceServer, name string) {
	t.Helper()
	op, err := c.CreateInstance(api.InstancesPost{
		Name:   name,
		Type:   api.InstanceTypeContainer,
		Source: api.InstanceSource{Type: "image", Alias: lxdtest.Image},
	})
	if err == nil {
		err = op.Wait()
	}
	if err != nil {
		t.Fatalf("create %s: %v", name, err)
	}
	op, err = c.UpdateInstanceState(name, api.InstanceStatePut{Action: "start", Timeout: -1}, "")
	if err == nil {
		err = op.Wait()
	}
	if err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
}

// execIn runs a command in a container and returns its exit code and stdout.
func execIn(t *testing.T, c lxd.InstanceServer, name string, cmd ...string) (int, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	done := make(chan bool)
	op, err := c.ExecInstance(name, api.InstanceExecPost{Command: cmd, WaitForWS: true},
		&lxd.InstanceExecArgs{Stdout: &stdout, Stderr: &stderr, DataDone: done})
	if err == nil {
		err = op.Wait()
	}
	if err != nil {
		t.Fatalf("exec %q in %s: %v", cmd, name, err)
	}
	<-done // all output has arrived
	code, _ := op.Get().Metadata["return"].(float64)
	return int(code), stdout.String() + stderr.String()
}
