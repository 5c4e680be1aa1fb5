package test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// TestDaemonReachesLXD starts the daemon before LXD is reachable, then makes a private LXD
// appear at the socket path: the daemon must report why LXD is unavailable, then connect.
func TestDaemonReachesLXD(t *testing.T) {
	t.Parallel()
	private := lxdtest.Shared(t)

	server, _, err := private.Client(t).GetServer()
	must(t, err)

	socket := filepath.Join(t.TempDir(), "lxd.socket")
	d := startDaemon(t, daemonOptions{LXDSocket: socket})

	env := serverEnvironment(t, d)
	if env.LXDStatus != "unavailable" || env.LXDError == "" {
		t.Fatalf("before LXD appears: %+v", env)
	}

	must(t, os.Symlink(private.Socket, socket))
	waitUntil(t, "the daemon connected to LXD once it appeared", 20*time.Second, func() bool {
		env = serverEnvironment(t, d)
		return env.LXDStatus == "online"
	}, every(100*time.Millisecond), showing(func() string { return fmt.Sprintf("%+v", env) }), withLog(d.Log))

	if env.LXDVersion != server.Environment.ServerVersion || env.LXDError != "" {
		t.Fatalf("online LXD: %+v, LXD says version %s", env, server.Environment.ServerVersion)
	}

}
