package lxdtest_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// TestFaults: a restarted or frozen LXD leaves its container running (same init pid), and
// the proxy passes exec (websockets and the wait's long poll), events, and fails what it is
// told to, in LXD's error envelope.
func TestFaults(t *testing.T) {
	l := lxdtest.Start(t)
	c := l.Client(t)
	createAndStart(t, c, "f1")
	pid := initPid(t, c, "f1")

	t.Run("proxy", func(t *testing.T) {
		p := lxdtest.StartProxy(t, l.Socket, 1)
		pc, err := lxd.ConnectLXDUnix(p.Socket, nil)
		if err != nil {
			t.Fatal(err)
		}

		listener, err := pc.GetEvents()
		if err != nil {
			t.Fatalf("events through the proxy: %v", err)
		}

		defer listener.Disconnect()
		if code, out := execIn(t, pc, "f1", "echo", "through"); code != 0 || !strings.Contains(out, "through") {
			t.Fatalf("exec through the proxy: %d %q", code, out)
		}

		p.Set(lxdtest.ProxyFaults{ExecFails: true})
		_, err = pc.ExecInstance("f1", api.InstanceExecPost{Command: []string{"true"}}, nil)
		if code, ok := api.StatusErrorMatch(err); !ok || code != http.StatusInternalServerError {
			t.Fatalf("exec with ExecFails: want LXD's 500 envelope, got %v", err)
		}

		if _, _, err := pc.GetInstance("f1"); err != nil {
			t.Fatalf("ExecFails fails only exec: %v", err)
		}

		p.Set(lxdtest.ProxyFaults{FailShare: 1})
		if _, _, err := pc.GetInstance("f1"); err == nil {
			t.Fatal("FailShare 1 must fail every call")
		}

		p.Set(lxdtest.ProxyFaults{Delay: 300 * time.Millisecond})
		began := time.Now()
		if _, _, err := pc.GetInstance("f1"); err != nil || time.Since(began) < 300*time.Millisecond {
			t.Fatalf("Delay: %v after %v", err, time.Since(began))
		}

		p.Set(lxdtest.ProxyFaults{})
		next := p.Next(http.MethodGet, "/1.0/instances/f1")
		go func() { _, _, _ = pc.GetInstance("f1") }()
		select {
		case <-next:
		case <-time.After(5 * time.Second):
			t.Fatal("Next did not see GET /1.0/instances/f1 pass")
		}

		calls, failed, slowed := p.Counts()
		t.Logf("proxy: %d calls, %d failed, %d slowed", calls, failed, slowed)
	})

	t.Run("restart", func(t *testing.T) {
		before := l.Pid()
		took := l.Restart(t, 2*time.Second)
		t.Logf("LXD gone and back in %v", took)
		if l.Pid() == before {
			t.Fatal("the restart kept the same lxd process")
		}

		c = l.Client(t)
		if got := initPid(t, c, "f1"); got != pid {
			t.Fatalf("the container's init pid went from %d to %d over LXD's restart", pid, got)
		}
	})

	t.Run("freeze", func(t *testing.T) {
		l.Freeze(t)
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		frozen, err := lxd.ConnectLXDUnixWithContext(ctx, l.Socket, nil)
		if err == nil {
			frozen.Disconnect()
			t.Fatal("a frozen LXD answered")
		}

		l.Thaw(t)
		if got := initPid(t, l.Client(t), "f1"); got != pid {
			t.Fatalf("the container's init pid went from %d to %d over a freeze", pid, got)
		}
	})
}

// initPid is the container's init pid on the host, as LXD reports it.
func initPid(t *testing.T, c lxd.InstanceServer, name string) int64 {
	t.Helper()
	state, _, err := c.GetInstanceState(name)
	if err != nil || state.Pid == 0 {
		t.Fatalf("state of %s: %v (pid %d)", name, err, state.Pid)
	}

	return state.Pid
}
