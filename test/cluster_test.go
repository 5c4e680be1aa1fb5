package test

import (
	"fmt"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestClusteredDaemons joins two more daemons to a first one's dqlite: what one writes, the
// others read, and the cluster outlives the member that started it.
func TestClusteredDaemons(t *testing.T) {
	first := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	a := startDaemon(t, daemonOptions{ExtraArgs: []string{"--cluster-address", first}})
	b := startDaemon(t, daemonOptions{ExtraArgs: []string{"--cluster-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--cluster-join", first}})
	c := startDaemon(t, daemonOptions{ExtraArgs: []string{"--cluster-address", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--cluster-join", first}})

	must(t, a.Unix(t).CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "shared"}}))
	for _, member := range []*daemon{b, c} {
		_, _, err := member.Unix(t).GetDeployment("shared")
		must(t, err)
	}

	must(t, b.Unix(t).CreateDeploymentShape("shared", webShape("web", 0, 2)))
	_, _, err := c.Unix(t).GetDeploymentShape("shared", "web")
	must(t, err)

	if !serverEnvironment(t, b).ServerClustered {
		t.Fatal("a joined daemon must say it is clustered")
	}

	// The first member goes away; the other two keep a quorum and keep serving writes.
	a.Stop(t)
	deadline := time.Now().Add(30 * time.Second)
	for {
		err = c.Unix(t).CreateDeploymentShape("shared", webShape("db", 0, 1))
		if err == nil {
			break
		}

		if time.Now().After(deadline) {
			t.Fatalf("the remaining members did not take over: %v\n%s", err, c.Log())
		}

		time.Sleep(200 * time.Millisecond)
	}

	_, _, err = b.Unix(t).GetDeploymentShape("shared", "db")
	must(t, err)
}
