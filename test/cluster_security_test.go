package test

import (
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// keyPairFiles reads a key pair from a daemon's data directory (member.crt, cluster.crt).
func keyPairFiles(t *testing.T, d *daemon, name string) *identity {
	t.Helper()
	certPEM, err := os.ReadFile(filepath.Join(d.DataDir, name+".crt"))
	must(t, err)
	keyPEM, err := os.ReadFile(filepath.Join(d.DataDir, name+".key"))
	must(t, err)
	return &identity{CertPEM: string(certPEM), KeyPEM: string(keyPEM)}
}

// statusWith sends GET path to d's HTTPS API presenting id and returns the HTTP status.
func statusWith(t *testing.T, d *daemon, id *identity, path string) int {
	t.Helper()
	pair, err := tls.X509KeyPair([]byte(id.CertPEM), []byte(id.KeyPEM))
	must(t, err)
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{pair}}}
	defer transport.CloseIdleConnections()
	resp, err := (&http.Client{Transport: transport, Timeout: 10 * time.Second}).Get("https://" + d.HTTPSAddress + path)
	must(t, err)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// dqliteRefuses reports whether d's database address refuses a TLS client presenting id
// (with TLS 1.3 the refusal arrives on the first read; an accepted client waits instead).
func dqliteRefuses(t *testing.T, d *daemon, id *identity) bool {
	t.Helper()
	pair, err := tls.X509KeyPair([]byte(id.CertPEM), []byte(id.KeyPEM))
	must(t, err)
	conn, err := tls.Dial("tcp", d.ClusterAddress, &tls.Config{InsecureSkipVerify: true, Certificates: []tls.Certificate{pair}})
	if err != nil {
		return true
	}

	defer func() { _ = conn.Close() }()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	_, _ = conn.Write([]byte{1, 0, 0, 0, 0, 0, 0, 0})
	_, err = conn.Read(make([]byte, 8))
	return err != nil && strings.Contains(err.Error(), "certificate")
}

// TestMemberCredentials: each member has its own certificate; another member's API takes
// it on the internal member routes only, and refuses it on every member within a second
// of the member's removal. The shared cluster certificate is no API credential at all.
// Join tokens are listed, revocable and spent when their member joins; the cluster
// certificate rotates without downtime, after which the old one is refused.
func TestMemberCredentials(t *testing.T) {
	private := lxdtest.Shared(t)
	m1 := startDaemon(t, daemonOptions{LXDSocket: private.Socket, Cluster: true, ExtraArgs: []string{"--cluster-name", "m1"}})
	m2 := startMember(t, m1, "m2", private.Socket)
	m3 := startMember(t, m1, "m3", private.Socket)
	waitMembers(t, m1, map[string]string{"m1": "voter/Online", "m2": "voter/Online", "m3": "voter/Online"})
	must(t, m1.Unix(t).CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))

	outer := t // members started in a subtest live on after it
	m2Cert := keyPairFiles(t, m2, "member")
	oldCluster := keyPairFiles(t, m1, "cluster")
	const events = "/internal/cluster/events"

	t.Run("a member certificate reaches the member routes only", func(t *testing.T) {
		for _, m := range []*daemon{m1, m3} {
			if code := statusWith(t, m, m2Cert, events); code == http.StatusForbidden {
				t.Fatalf("m2's certificate on %s: 403 before its removal", events)
			}

			for _, path := range []string{"/1.0/deployments", "/1.0/cluster/members", "/1.0/operations", "/1.0/certificates"} {
				if code := statusWith(t, m, m2Cert, path); code != http.StatusForbidden {
					t.Errorf("m2's member certificate on %s: HTTP %d, want 403", path, code)
				}

				// Whoever holds the cluster key (every member, and every daemon that ever
				// redeemed a token) is no admin either.
				if code := statusWith(t, m, oldCluster, path); code != http.StatusForbidden {
					t.Errorf("the cluster certificate on %s: HTTP %d, want 403", path, code)
				}
			}

			if code := statusWith(t, m, oldCluster, events); code != http.StatusForbidden {
				t.Errorf("the cluster certificate on %s: HTTP %d, want 403", events, code)
			}
		}
	})

	t.Run("a removed member's certificate is refused everywhere within a second", func(t *testing.T) {
		must(t, m1.Unix(t).DeleteClusterMember("m2", false))
		removed := time.Now()
		for _, m := range []*daemon{m1, m3} {
			waitUntil(t, "m2's certificate refused", time.Until(removed.Add(time.Second)), func() bool {
				return statusWith(t, m, m2Cert, events) == http.StatusForbidden
			}, every(50*time.Millisecond), showing(func() string { return fmt.Sprintf("still accepted %s after its removal", time.Since(removed)) }))
		}

		t.Logf("m2's certificate refused on m1 and m3 %s after its removal returned", time.Since(removed).Round(time.Millisecond))
		waitExit(t, m2, 30*time.Second)
	})

	t.Run("join tokens are listed, revocable and spent on join", func(t *testing.T) {
		cli := newCLIUser(t, m1)
		revoked, err := m1.Unix(t).CreateClusterJoinToken("m9")
		must(t, err)
		list := cli.run("", "cluster", "list-tokens", "--format", "csv")
		if list.code != 0 || !contains(list.stdout, "m9,Pending,") {
			t.Fatalf("lxd-deploy cluster list-tokens: %+v", list)
		}

		pending, err := m3.Unix(t).GetClusterMember("m9")
		must(t, err)
		if pending.Status != "Pending" || pending.ExpiresAt == nil {
			t.Fatalf("GET on a pending member: %+v", pending)
		}

		revoke := cli.run("", "cluster", "revoke-token", "m9")
		if revoke.code != 0 {
			t.Fatalf("lxd-deploy cluster revoke-token: %+v", revoke)
		}

		if out := joinOutput(t, revoked.Token); !strings.Contains(out, "join token is not valid") {
			t.Fatalf("a revoked token: %s", out)
		}

		expectCode(t, m1.Unix(t).DeleteClusterMember("m9", false), 404, "revoking twice")
		token, err := m1.Unix(t).CreateClusterJoinToken("m4")
		must(t, err)
		m4 := startDaemon(outer, daemonOptions{LXDSocket: private.Socket, Cluster: true, ExtraArgs: []string{"--cluster-join-token", token.Token}})
		waitMembers(t, m4, map[string]string{"m1": "/Online", "m3": "/Online", "m4": "/Online"})
		tokens, err := m1.Unix(t).GetClusterJoinTokens()
		must(t, err)
		if len(tokens) != 0 {
			t.Fatalf("the token of a member that joined is spent, got %+v", tokens)
		}

		if out := joinOutput(t, token.Token); !strings.Contains(out, "join token is not valid") {
			t.Fatalf("a spent token: %s", out)
		}
	})

	t.Run("the cluster certificate rotates without downtime", func(t *testing.T) {
		if dqliteRefuses(t, m1, oldCluster) {
			t.Fatal("the database refuses the current cluster certificate")
		}

		stop := make(chan struct{})
		writes := make(chan error, 1)
		go func() {
			// Writes through every member keep working during the rotation.
			var err error
			for i := 0; err == nil; i++ {
				select {
				case <-stop:
					writes <- nil
					return
				default:
				}

				m := []*daemon{m1, m3}[i%2]
				err = m.Unix(t).UpdateDeployment("dep1", api.DeploymentPut{Description: time.Now().String()}, "")
				time.Sleep(50 * time.Millisecond)
			}

			writes <- err
		}()

		started := time.Now()
		update := newCLIUser(t, m3).run("", "cluster", "update-certificate")
		t.Logf("update-certificate took %s with writes through two members meanwhile", time.Since(started).Round(time.Millisecond))
		close(stop)
		must(t, <-writes)
		if update.code != 0 || !strings.Contains(update.stdout, "rotated") {
			t.Fatalf("lxd-deploy cluster update-certificate: %+v\nm1's log:\n%s", update, m1.Log())
		}

		newCluster := keyPairFiles(t, m1, "cluster")
		if newCluster.CertPEM == oldCluster.CertPEM {
			t.Fatal("m1's cluster.crt did not change")
		}

		for _, m := range []*daemon{m1, m3} {
			if keyPairFiles(t, m, "cluster").CertPEM != newCluster.CertPEM {
				t.Fatalf("members present different cluster certificates")
			}

			// Each member drops a retired certificate at its next beat (a second).
			waitUntil(t, "the database refusing the old cluster certificate", 3*time.Second, func() bool {
				return dqliteRefuses(t, m, oldCluster)
			}, every(100*time.Millisecond))

			if dqliteRefuses(t, m, newCluster) {
				t.Errorf("the database refuses the new cluster certificate")
			}
		}

		// The cluster works on, and a new member joins with a token naming the new one.
		must(t, m1.Unix(t).CreateDeploymentShape("dep1", webShape("after-rotation", 0, 1)))
		m5 := startMember(outer, m3, "m5", private.Socket)
		_, _, err := m5.Unix(t).GetDeploymentShape("dep1", "after-rotation")
		must(t, err)
	})
}
