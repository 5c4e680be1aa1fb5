package test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// doorEnv is shape web of busybox httpd instances (0..7) behind the daemon's private
// HAProxy on doorAddress, in the namespace runInNetns made, with the loop that gives
// every running instance an address on br0 and a server (configureServers).
type doorEnv struct {
	*governorEnv
}

// newDoorEnv makes the bridge, starts the daemon with args and sets the shape's traffic
// (drain timeout drain), health and a rolling rollout of one at a time.
func newDoorEnv(t *testing.T, drain time.Duration, health *api.DeploymentShapeHealth, args ...string) *doorEnv {
	t.Helper()
	needHAProxy(t)
	netnsBridge(t, "10.79.0.1/24")

	// Registered first, so it runs last: after the daemon stopped (a running daemon starts
	// its door again).
	var env *governorEnv
	t.Cleanup(func() {
		if env != nil {
			stopPrivateDoor(env.d.DataDir)
		}
	})
	env = newRolloutEnv(t, 0, 7, args...)
	env.lxd.Lxc(t, "profile", "device", "add", "default", "eth0", "nic", "nictype=bridged", "parent=br0", "name=eth0")
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Traffic = &api.DeploymentShapeTraffic{Port: 8080, Protocol: "http", Listen: doorAddress, DrainTimeout: drain.String()}
		put.Health = health
		put.Rollout = api.DeploymentShapeRollout{MaxSurge: "1", MaxUnavailable: "0", MinReady: "1s"}
	})

	// Every instance of the shape gets an address and a server as soon as it runs: busybox
	// has no DHCP client and its init starts nothing.
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go configureServers(ctx, t, env)
	return &doorEnv{governorEnv: env}
}

// endpoints returns the shape's endpoints by instance (nil when the API fails).
func (e *doorEnv) endpoints() map[string]api.DeploymentShapeEndpoint {
	list, err := e.gov.GetDeploymentShapeEndpoints("dep1", "web")
	if err != nil {
		return nil
	}

	byName := map[string]api.DeploymentShapeEndpoint{}
	for _, endpoint := range list {
		byName[endpoint.Instance] = endpoint
	}

	return byName
}

// serving counts the serving endpoints (-1 when the API fails).
func (e *doorEnv) serving() int {
	list := e.endpoints()
	if list == nil {
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

// waitServing waits until exactly n endpoints serve.
func (e *doorEnv) waitServing(t testing.TB, n int) {
	t.Helper()
	e.waitUntil(t, fmt.Sprintf("%d serving", n), 3*time.Minute, func() bool { return e.serving() == n }, showing(func() string {
		return fmt.Sprintf("%+v", e.endpoints())
	}))
}

// startAt scales to n, waits until they serve and the door answers, and returns their
// names.
func (e *doorEnv) startAt(t testing.TB, n int) []string {
	t.Helper()
	names := e.scaleTo(t, n)
	e.waitServing(t, n)
	e.waitUntil(t, "the door answering", time.Minute, func() bool { return get(t, "/") == nil })
	return names
}

// load starts the load generator through the door, explained by the door's diagnostics.
func (e *doorEnv) load() *loadGenerator {
	load := startLoad(20 * time.Millisecond)
	load.explain = func() string { return doorDiagnostics(e.governorEnv) }
	return load
}

// doorServerStatus asks the private HAProxy (its admin socket, "show stat") for the status
// of an instance's server in the shape's backend: "UP", "DOWN", "MAINT", ... ("" when the
// door has no such server).
func doorServerStatus(dataDir string, instance string) (string, error) {
	c, err := net.DialTimeout("unix", filepath.Join(dataDir, "frontdoor", "admin.sock"), time.Second)
	if err != nil {
		return "", err
	}

	defer func() { _ = c.Close() }()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Write([]byte("show stat\n"))
	if err != nil {
		return "", err
	}

	// CSV: pxname,svname,...; status is field 18 (index 17).
	scanner := bufio.NewScanner(c)
	for scanner.Scan() {
		fields := strings.Split(scanner.Text(), ",")
		if len(fields) > 17 && strings.HasPrefix(fields[0], "be_") && fields[1] == "ld-"+instance {
			return fields[17], nil
		}
	}

	return "", scanner.Err()
}
