package test

import (
	"crypto/tls"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestClusteredDaemons joins two more daemons to a first one's dqlite, over TLS with the
// cluster certificate the first one made: what one writes, the others read, and the cluster
// outlives the member that started it.
func TestClusteredDaemons(t *testing.T) {
	t.Parallel()
	a := startDaemon(t, daemonOptions{Cluster: true})
	first := a.ClusterAddress

	// Without the cluster certificate a daemon cannot join, and says what to do.
	out, err := exec.Command(daemonBinary, "--data-dir", t.TempDir(), "--https-address", "", "--vsock-port", "0",
		"--cluster-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--cluster-join", first).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "copy cluster.crt and cluster.key") {
		t.Fatalf("joining without the cluster certificate: %v\n%s", err, out)
	}

	files := map[string][]byte{}
	for _, name := range []string{"cluster.crt", "cluster.key"} {
		files[name], err = os.ReadFile(filepath.Join(a.DataDir, name))
		must(t, err)
	}

	b := startDaemon(t, daemonOptions{Files: files, Cluster: true, ExtraArgs: []string{"--cluster-join", first}})
	c := startDaemon(t, daemonOptions{Files: files, Cluster: true, ExtraArgs: []string{"--cluster-join", first}})

	// The cluster address takes only members: a TLS client without the cluster
	// certificate is turned away (with TLS 1.3 the refusal arrives on the first read).
	conn, err := tls.Dial("tcp", first, &tls.Config{InsecureSkipVerify: true})
	if err == nil {
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		_, _ = conn.Write([]byte{0, 0, 0, 0, 0, 0, 0, 1})
		_, err = conn.Read(make([]byte, 8))
		_ = conn.Close()
	}

	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("a client without the cluster certificate must be refused, got %v", err)
	}

	must(t, a.Unix(t).CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "shared"}}))
	for _, member := range []*daemon{b, c} {
		_, _, err := member.Unix(t).GetDeployment("shared")
		must(t, err)
	}

	must(t, b.Unix(t).CreateDeploymentShape("shared", webShape("web", 0, 2)))
	_, _, err = c.Unix(t).GetDeploymentShape("shared", "web")
	must(t, err)

	if !serverEnvironment(t, b).ServerClustered {
		t.Fatal("a joined daemon must say it is clustered")
	}

	// The first member goes away; the other two keep a quorum and keep serving writes.
	a.Stop(t)
	waitUntil(t, "the remaining members taking over", 30*time.Second, func() bool {
		err = c.Unix(t).CreateDeploymentShape("shared", webShape("db", 0, 1))
		return err == nil
	}, showing(func() string { return err.Error() }), withLog(c.Log))

	_, _, err = b.Unix(t).GetDeploymentShape("shared", "db")
	must(t, err)
}
