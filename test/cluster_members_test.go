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

// waitMembers waits until the members seen through d match want (name -> "role/status",
// or "/status" for any role).
func waitMembers(t *testing.T, d *daemon, want map[string]string) []api.ClusterMember {
	t.Helper()
	var members []api.ClusterMember
	var got map[string]string
	var err error
	waitUntil(t, "members "+fmt.Sprint(want), 20*time.Second, func() bool {
		members, err = d.Unix(t).GetClusterMembers()
		got = map[string]string{}
		for _, m := range members {
			got[m.ServerName] = m.DatabaseRole + "/" + m.Status
			if strings.HasPrefix(want[m.ServerName], "/") {
				got[m.ServerName] = "/" + m.Status
			}
		}

		return err == nil && fmt.Sprint(got) == fmt.Sprint(want)
	}, showing(func() string { return fmt.Sprintf("got %v (%v)", got, err) }))
	return members
}

// TestClusterMembers joins three members with tokens (single use, expiring), checks that
// metrics rounds and webhook deliveries happen once whatever the member count, then
// removes a dead member with --force and a live one cleanly: each time a working
// two-member cluster remains.
func TestClusterMembers(t *testing.T) {
	private := lxdtest.Shared(t)
	m1 := startDaemon(t, daemonOptions{LXDSocket: private.Socket, Cluster: true, ExtraArgs: []string{"--cluster-name", "m1", "--cluster-join-token-expiry", "8s"}})
	late, err := m1.Unix(t).CreateClusterJoinToken("late")
	must(t, err)
	issued := time.Now()

	m2 := startMember(t, m1, "m2", private.Socket)
	token3, err := m1.Unix(t).CreateClusterJoinToken("m3")
	must(t, err)
	m3 := startDaemon(t, daemonOptions{LXDSocket: private.Socket, Cluster: true, ExtraArgs: []string{"--cluster-join-token", token3.Token}})
	if out := joinOutput(t, token3.Token); !strings.Contains(out, "join token is not valid") {
		t.Fatalf("a spent token: %s", out)
	}

	_, err = m1.Unix(t).CreateClusterJoinToken("m2")
	expectCode(t, err, 409, "a token for a member name in use")

	// Three voters as soon as three members are up.
	waitMembers(t, m3, map[string]string{"m1": "voter/Online", "m2": "voter/Online", "m3": "voter/Online"})
	list := newCLIUser(t, m2).run("", "cluster", "list", "--format", "csv")
	if list.code != 0 || !contains(list.stdout, "m1,", "m2,", "m3,", "voter") {
		t.Fatalf("lxd-deploy cluster list: %+v", list)
	}

	// With three members, metrics go out once per interval and each event once.
	hook := newReceiver(t)
	must(t, m2.Unix(t).CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}, DeploymentPut: api.DeploymentPut{GovernorWebhookURL: hook.server.URL, Config: map[string]string{"webhook.metrics_interval": "1s"}}}))
	secret, err := m3.Unix(t).GetWebhookSecret("dep1", false)
	must(t, err)
	hook.set(secret, 0)
	pings := map[string]bool{}
	for _, m := range []*daemon{m1, m2, m3} {
		id, err := m.Unix(t).PingWebhook("dep1")
		must(t, err)
		pings[id] = true
	}

	hook.waitFor("metrics", 20*time.Second, func(e api.WebhookEvent) bool { return e.Type == "metrics" })
	time.Sleep(5 * time.Second)
	hook.mu.Lock()
	metrics := map[int64]int{} // second -> events
	for _, e := range hook.events {
		if e.Type == "metrics" {
			metrics[e.Timestamp.Unix()]++
		}

		delete(pings, e.ID)
	}

	attempts, unique := hook.attempts, len(hook.events)
	hook.mu.Unlock()
	for second, n := range metrics {
		if n > 1 {
			t.Fatalf("%d metrics events in second %d: each member runs its own rounds (%v)", n, second, metrics)
		}
	}

	if len(metrics) < 3 || len(pings) != 0 || attempts != unique {
		t.Fatalf("metrics seconds %v, pings not delivered %v, %d attempts for %d events", metrics, pings, attempts, unique)
	}

	// A token is good once and for a limited time.
	time.Sleep(time.Until(issued.Add(9 * time.Second)))
	if out := joinOutput(t, late.Token); !strings.Contains(out, "expired") {
		t.Fatalf("an expired token: %s", out)
	}

	// A dead member is removed with --force once it is seen offline; two members remain
	// and keep a working database.
	m3.Kill(t)
	waitMembers(t, m1, map[string]string{"m1": "voter/Online", "m2": "voter/Online", "m3": "voter/Offline"})
	err = m1.Unix(t).DeleteClusterMember("m3", false)
	expectCode(t, err, 409, "removing an offline member without force")
	remove := newCLIUser(t, m1).run("", "cluster", "remove", "m3", "--force")
	if remove.code != 0 {
		t.Fatalf("lxd-deploy cluster remove --force: %+v", remove)
	}

	// Of two members dqlite keeps one voter and one stand-by or spare (a second voter would
	// not survive any more failures); both serve.
	waitMembers(t, m2, map[string]string{"m1": "/Online", "m2": "/Online"})
	must(t, m2.Unix(t).CreateDeploymentShape("dep1", webShape("after-force", 0, 1)))

	// A live member is removed cleanly: it hands its role over and stops by itself.
	cli := newCLIUser(t, m1)
	add := cli.run("", "cluster", "add", "m4")
	lines := strings.Split(strings.TrimSpace(add.stdout), "\n")
	if add.code != 0 || len(lines) != 2 || !strings.Contains(lines[0], "m4 join token") {
		t.Fatalf("lxd-deploy cluster add: %+v", add)
	}

	m4 := startDaemon(t, daemonOptions{LXDSocket: private.Socket, Cluster: true, ExtraArgs: []string{"--cluster-join-token", lines[1]}})
	show := cli.run("", "cluster", "show", "m4")
	if show.code != 0 || !contains(show.stdout, "server_name: m4", "database_address: 127.0.0.1:") {
		t.Fatalf("lxd-deploy cluster show: %+v", show)
	}

	waitMembers(t, m4, map[string]string{"m1": "voter/Online", "m2": "voter/Online", "m4": "voter/Online"})
	must(t, m4.Unix(t).CreateDeploymentShape("dep1", webShape("on-m4", 0, 1)))
	must(t, m4.Unix(t).DeleteClusterMember("m2", false))
	waitExit(t, m2, 30*time.Second)
	waitMembers(t, m1, map[string]string{"m1": "/Online", "m4": "/Online"})
	must(t, m1.Unix(t).CreateDeploymentShape("dep1", webShape("after-clean", 0, 1)))
	_, _, err = m4.Unix(t).GetDeploymentShape("dep1", "after-force")
	must(t, err)
}
