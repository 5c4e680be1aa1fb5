package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// netnsChildEnv marks the copy of the test binary that runs inside the test's network
// namespace.
const netnsChildEnv = "LXD_DEPLOYD_TEST_NETNS"

// TestHTTPAndTCPHealthChecks: http and tcp checks reach instances at the addresses LXD
// reports, never through exec. Everything runs in a network namespace the test makes
// (doc/health.md): the test binary runs itself again inside it, and there starts its own
// LXD, the daemon and a bridge, so the instances' addresses exist only inside it and no
// outside address is ever dialled.
func TestHTTPAndTCPHealthChecks(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	netnsBridge(t, "10.77.0.1/24")

	env := newGovernorEnv(t, 0, 3)
	env.lxd.Lxc(t, "profile", "device", "add", "default", "eth0", "nic", "nictype=bridged", "parent=br0", "name=eth0")
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Health = &api.DeploymentShapeHealth{HTTP: &api.DeploymentShapeHealthHTTP{Port: 8080, Path: "/healthz"}, Interval: "1s", Timeout: "1s", Grace: "0s", UnhealthyThreshold: 1}
	})

	// a serves /healthz on 8080 (busybox httpd); b has an address and no server.
	a, b := env.name("a"), env.name("b")
	for i, name := range []string{a, b} {
		env.launch(t, env.gov, name)
		env.exec(t, name, "ip", "addr", "add", fmt.Sprintf("10.77.0.%d/24", 10+i), "dev", "eth0")
		env.exec(t, name, "ip", "link", "set", "eth0", "up")
	}

	env.exec(t, a, "mkdir", "-p", "/www")
	env.pushFile(t, a, "/www/healthz", []byte("ok\n"), 0o644)
	env.exec(t, a, "httpd", "-p", "8080", "-h", "/www")

	// LXD itself reports the addresses the checks use.
	for i, name := range []string{a, b} {
		state, _, err := env.lxdConn.GetInstanceState(name)
		must(t, err)
		found := false
		for _, addr := range state.Network["eth0"].Addresses {
			found = found || addr.Address == fmt.Sprintf("10.77.0.%d", 10+i)
		}

		if !found {
			t.Fatalf("LXD must report %s's address: %+v", name, state.Network)
		}
	}

	verdicts := func(wantA string, outA string, wantB string, outB string) {
		env.waitUntil(t, fmt.Sprintf("a %s (%s), b %s (%s)", wantA, outA, wantB, outB), 30*time.Second, func() bool {
			byName := env.instancesByName(t)
			ia, ib := byName[a], byName[b]
			return ia.Health == wantA && ib.Health == wantB && ia.HealthCheck != nil && ib.HealthCheck != nil &&
				strings.Contains(ia.HealthCheck.Output, outA) && strings.Contains(ib.HealthCheck.Output, outB)
		}, showing(func() string { return fmt.Sprintf("%+v", env.instancesByName(t)) }))
	}

	phase(t, "http", func(t *testing.T) {
		verdicts(api.HealthHealthy, "HTTP 200: ok", api.HealthUnhealthy, "refused")
	})

	phase(t, "tcp", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) {
			put.Health = &api.DeploymentShapeHealth{TCP: &api.DeploymentShapeHealthTCP{Port: 8080}, Interval: "1s", Timeout: "1s", Grace: "0s", UnhealthyThreshold: 1}
		})

		verdicts(api.HealthHealthy, "connected to 10.77.0.10:8080", api.HealthUnhealthy, "refused")
	})

	// a's server stops: its http check fails with what the GET got.
	phase(t, "a server that stops", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) {
			put.Health = &api.DeploymentShapeHealth{HTTP: &api.DeploymentShapeHealthHTTP{Port: 8080, Path: "/missing"}, Interval: "1s", Timeout: "1s", Grace: "0s", UnhealthyThreshold: 1}
		})

		verdicts(api.HealthUnhealthy, "HTTP 404", api.HealthUnhealthy, "refused")
	})
}

// netnsBridge makes, in the network namespace runInNetns put the test in, its loopback and
// a bridge br0 with address (a CIDR) for an LXD network to attach to.
func netnsBridge(t testing.TB, address string) {
	t.Helper()
	for _, args := range [][]string{
		{"link", "set", "lo", "up"},
		{"link", "add", "br0", "type", "bridge"},
		{"addr", "add", address, "dev", "br0"},
		{"link", "set", "br0", "up"},
	} {
		out, err := exec.Command("ip", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("ip %v: %v\n%s", args, err, out)
		}
	}
}

// netnsSeq numbers the namespaces runInNetns makes in this process.
var netnsSeq atomic.Int64

// runInNetns runs the calling test again, in a copy of the test binary inside a fresh
// network namespace, and fails if it fails there.
func runInNetns(t *testing.T) {
	// One namespace per test: several such tests run in parallel in one test binary.
	name := fmt.Sprintf("ldd-test-%d-%d", os.Getpid(), netnsSeq.Add(1))
	out, err := exec.Command("ip", "netns", "add", name).CombinedOutput()
	if err != nil {
		if os.Getenv("LXDTEST_REQUIRE") != "" {
			t.Fatalf("cannot make a network namespace: %v\n%s", err, out)
		}

		t.Skipf("cannot make a network namespace (needs root): %v\n%s", err, out)
	}

	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
	// ip netns exec, unlike a bare nsenter --net, also mounts a /sys of the namespace, where
	// LXD looks for the bridge.
	cmd := exec.Command("ip", "netns", "exec", name, os.Args[0], "-test.run", "^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), netnsChildEnv+"=1", builtBinariesEnv+"="+filepath.Dir(daemonBinary))
	out, err = cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
		t.Fatalf("inside network namespace %s: %v\n%s", name, err, out)
	}

	// The phases as they passed inside, and what they measured, without the daemon's logs.
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "--- ") || strings.Contains(line, "measured: ") {
			t.Log(strings.TrimSpace(line))
		}
	}
}
