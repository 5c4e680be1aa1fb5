package test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// TestTrafficClusterPrivateDoorMemberKilled (issue 35): a private door is its own
// member's (doc/traffic.md, "In a cluster of daemons"). m1 runs the shape's door (the
// default private HAProxy), m2 and m3 none. Under constant load through m1's door, m1 is
// killed (kill -9): its HAProxy serves on with its last picture while m2 scales the shape
// out and deletes one of the instances the door knows (its own checks take it out), and no
// request fails; m1 started again adopts its HAProxy and brings it up to date: the new
// instances serve through it and the deleted one is gone from it.
func TestTrafficClusterPrivateDoorMemberKilled(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	needHAProxy(t)
	netnsBridge(t, "10.79.0.1/24")
	private := lxdtest.Shared(t)
	var m1 *daemon
	// Registered first, so it runs last: after the daemons stopped.
	t.Cleanup(func() {
		if m1 != nil {
			stopPrivateDoor(m1.DataDir)
		}
	})

	m1 = startDaemon(t, daemonOptions{LXDSocket: private.Socket, Cluster: true, ExtraArgs: []string{"--cluster-name", "m1"}})
	members := []*daemon{m1}
	for _, name := range []string{"m2", "m3"} {
		token, err := m1.Unix(t).CreateClusterJoinToken(name)
		must(t, err)
		members = append(members, startDaemon(t, daemonOptions{LXDSocket: private.Socket, Cluster: true, ExtraArgs: []string{"--cluster-join-token", token.Token, "--front-door", "none"}}))
	}

	m2 := members[1]
	for _, m := range members {
		waitLXDOnline(t, m)
	}

	env := &governorEnv{d: m1, lxd: private, lxdConn: private.Client(t), admin: m1.Unix(t), prefix: "tclusterpriv"}
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(t, env.admin.CreateDeploymentShape("dep1", webShape("web", 0, 7)))
	id := newIdentity(t)
	trustIdentity(t, env.admin, id, "gov-cert", "deployments")
	must(t, env.admin.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "gov"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: id.Fingerprint}))
	env.gov = m2.HTTPS(t, id)
	env.d, env.admin = m2, m2.Unix(t)
	t.Cleanup(func() {
		_ = env.admin.DeleteDeploymentShape("dep1", "web", true)
		env.cleanupLXD(t)
	})

	env.lxd.Lxc(t, "profile", "device", "add", "default", "eth0", "nic", "nictype=bridged", "parent=br0", "name=eth0")
	// m2 has no door: its drains last their timeout.
	const drain = 5 * time.Second
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Traffic = &api.DeploymentShapeTraffic{Port: 8080, Protocol: "http", Listen: doorAddress, DrainTimeout: drain.String()}
		put.Health = &api.DeploymentShapeHealth{HTTP: &api.DeploymentShapeHealthHTTP{Port: 8080, Path: "/"}, Interval: "1s", Timeout: "1s", Grace: "0s", UnhealthyThreshold: 2}
	})

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go configureServers(ctx, t, env)
	door := &doorEnv{governorEnv: env}
	first := door.startAt(t, 2)
	admin := filepath.Join(m1.DataDir, "frontdoor", "admin.sock")
	waitDoorServers(t, admin, first, nil)
	load := startLoad(20 * time.Millisecond)
	load.explain = func() string { return clusterDoorDiagnostics(members, admin) }
	var more []string
	phase(t, "m1 killed, its door serves on while m2 changes the shape", func(t *testing.T) {
		time.Sleep(2 * time.Second)
		m1.Kill(t)
		var ops []interface{ Wait(context.Context) error }
		for i := 2; i < 4; i++ {
			name := env.name(fmt.Sprintf("i%d", i))
			more = append(more, name)
			op, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", name)
			must(t, err)
			ops = append(ops, op)
		}

		for _, op := range ops {
			waitOperation(t, op)
		}

		door.waitServing(t, 4)
		op, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", first[0])
		must(t, err)
		waitOperation(t, op)
		door.waitServing(t, 3)
		servers, err := haproxyStat(admin)
		must(t, err)
		t.Logf("measured: m1's door while m1 is down: %v (its last picture; %s deleted)", servers, first[0])
		load.check(t, "m1 killed while m2 scaled out and deleted an instance its door serves")
	})

	phase(t, "m1 started again brings its door up to date", func(t *testing.T) {
		started := time.Now()
		m1.Start(t)
		waitDoorServers(t, admin, append([]string{first[1]}, more...), []string{first[0]})
		t.Logf("measured: m1's door up to date %v after m1 was started again", time.Since(started).Round(100*time.Millisecond))
		load.check(t, "m1 started again")
	})

	load.stop()
}
