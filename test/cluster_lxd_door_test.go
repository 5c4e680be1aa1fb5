package test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	"golang.org/x/sys/unix"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// clusterDoorAddress is where the cluster test's door listens, in the cluster's namespace.
const clusterDoorAddress = "127.0.0.1:18084"

// TestLXDClusterDrainFrontDoor (issue 35): on the 3-member LXD cluster, a shape of 3 busybox
// httpd instances spread over the members behind the daemon's private HAProxy, under
// constant load through the door: draining member m3 moves its instance (a replacement
// launched elsewhere, the old one drained, then deleted) and no request fails.
//
// The networking is doc/traffic.md's shared L2 network: every member's LXD, the daemon,
// its HAProxy and the load run in the cluster's one network namespace, where a bridge br0
// (10.80.0.1/24) takes every instance's NIC whatever its member (the members see the
// namespace's sysfs: lxdtest.ClusterOptions.OwnSysfs).
func TestLXDClusterDrainFrontDoor(t *testing.T) {
	needHAProxy(t)
	c := lxdtest.StartCluster(t, lxdtest.ClusterOptions{OwnSysfs: true})
	ns := "/run/netns/" + c.NetNS
	for _, args := range [][]string{
		{"link", "add", "br0", "type", "bridge"},
		{"addr", "add", "10.80.0.1/24", "dev", "br0"},
		{"link", "set", "br0", "up"},
	} {
		out, err := exec.Command("nsenter", append([]string{"--net=" + ns, "ip"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}

	c.Member(t, "m1").Lxc(t, "profile", "device", "add", "default", "eth0", "nic", "nictype=bridged", "parent=br0", "name=eth0")
	var d *daemon
	t.Cleanup(func() {
		if d != nil {
			stopPrivateDoor(d.DataDir)
		}
	})
	d = startDaemon(t, daemonOptions{LXDSocket: c.Socket(), NetNS: ns, ExtraArgs: []string{"--lxd-poll-interval", "500ms", "--reconcile-interval", "1s"}})
	waitLXDOnline(t, d)
	admin := d.Unix(t)
	must(t, admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	shapeName := fmt.Sprintf("dweb%d", os.Getpid())
	web := webShape(shapeName, 0, 6)
	web.Placement = &api.DeploymentShapePlacement{Spread: api.PlacementSpreadMember}
	web.Health = healthzCheck()
	web.Traffic = &api.DeploymentShapeTraffic{Port: 8080, Protocol: "http", Listen: clusterDoorAddress, DrainTimeout: "30s"}
	web.Rollout = api.DeploymentShapeRollout{MinReady: "1s"}
	must(t, admin.CreateDeploymentShape("dep1", web))
	t.Cleanup(func() { _ = admin.DeleteDeploymentShape("dep1", shapeName, true) })

	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go bridgeServers(ctx, t, c.Client(t))

	e := &clusterEnv{lxd: c, d: d, admin: admin, prefix: fmt.Sprintf("pd-%d-", os.Getpid())}
	var names []string
	for i := range 3 {
		names = append(names, fmt.Sprintf("%s%d", e.prefix, i))
	}

	e.launch(t, shapeName, names...)
	if got := describeCounts(e.perMember(t, shapeName)); got != "m1=1 m2=1 m3=1" {
		t.Fatalf("3 launches landed %s, want one a member", got)
	}

	serving := func() int {
		list, err := admin.GetDeploymentShapeEndpoints("dep1", shapeName)
		if err != nil {
			return -1
		}

		n := 0
		for _, endpoint := range list {
			if endpoint.State == api.EndpointServing {
				n++
			}
		}

		return n
	}

	show := showing(func() string {
		list, err := admin.GetDeploymentShapeEndpoints("dep1", shapeName)
		return fmt.Sprintf("%+v %v", list, err)
	})
	waitUntil(t, "3 serving", 3*time.Minute, func() bool { return serving() == 3 }, show, every(200*time.Millisecond))
	load := startLoadTo(20*time.Millisecond, "http://"+clusterDoorAddress+"/", dialInNetns(ns))
	load.explain = func() string { return doorDiagnostics(&governorEnv{d: d}) }
	waitUntil(t, "the door answering", time.Minute, func() bool { return load.sent.Load() > 50 }, every(200*time.Millisecond))
	time.Sleep(2 * time.Second)
	load.check(t, "the steady state (3 instances on 3 members)")

	var onM3 string
	for name, member := range c.Locations(t, "") {
		if member == "m3" {
			onM3 = name
		}
	}

	start := time.Now()
	op, err := admin.DrainLXDMember("m3")
	must(t, err)
	must(t, op.Wait(context.Background()))
	took := time.Since(start)
	waitUntil(t, "3 serving after the drain", 3*time.Minute, func() bool { return serving() == 3 }, show, every(200*time.Millisecond))
	time.Sleep(2 * time.Second)
	load.stop()
	if got := describeCounts(e.perMember(t, shapeName)); strings.Contains(got, "m3") {
		t.Fatalf("after draining m3 the shape is %s", got)
	}

	if _, ok := c.Locations(t, "")[onM3]; ok || onM3 == "" {
		t.Fatalf("the instance on m3 (%q) was not moved: %v", onM3, c.Locations(t, ""))
	}

	t.Logf("measured: the drain of m3 moved %s in %v", onM3, took.Round(100*time.Millisecond))
	load.check(t, "a drain of LXD member m3")
}

// bridgeServers gives every running instance of the cluster an address on br0 and a
// busybox httpd, until ctx ends.
func bridgeServers(ctx context.Context, t *testing.T, conn lxd.InstanceServer) {
	serveRunning(ctx, t, conn, 200*time.Millisecond, func(name string, n int) bool {
		script := fmt.Sprintf("ip addr add 10.80.0.%d/24 dev eth0 && ip link set eth0 up && mkdir -p /www && echo %s > /www/index.html && echo ok > /www/healthz && httpd -p 8080 -h /www", 10+n, name)
		code, stderr, err := shellIn(conn, name, script, nil)
		if err == nil && code != 0 {
			t.Logf("configure %s: %s", name, stderr)
		}

		return err == nil && code == 0
	})
}

// dialInNetns dials from the network namespace ns: the socket is made on a thread moved
// there and back. The thread is not ended (a goroutine that exits locked ends it): a child
// started from it with a parent-death signal, the daemon for one, would be killed.
func dialInNetns(ns string) func(ctx context.Context, network, address string) (net.Conn, error) {
	return func(ctx context.Context, network, address string) (net.Conn, error) {
		type result struct {
			conn net.Conn
			err  error
		}

		done := make(chan result, 1)
		go func() {
			runtime.LockOSThread()
			home, err := os.Open("/proc/thread-self/ns/net")
			if err != nil {
				runtime.UnlockOSThread()
				done <- result{err: err}
				return
			}

			defer func() { _ = home.Close() }()
			target, err := os.Open(ns)
			if err != nil {
				runtime.UnlockOSThread()
				done <- result{err: err}
				return
			}

			defer func() { _ = target.Close() }()
			if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
				runtime.UnlockOSThread()
				done <- result{err: fmt.Errorf("setns %s: %w", ns, err)}
				return
			}

			var dialer net.Dialer
			conn, err := dialer.DialContext(ctx, network, address)
			// Back home before the thread serves another goroutine; a thread that cannot go
			// back stays locked, and ends with this goroutine.
			if unix.Setns(int(home.Fd()), unix.CLONE_NEWNET) == nil {
				runtime.UnlockOSThread()
			}

			done <- result{conn, err}
		}()

		r := <-done
		return r.conn, r.err
	}
}
