package test

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestHealthChecksNeverReachTheHost (issue 32 item 4): root inside an instance chooses the
// addresses LXD reports for it. A host service listens on the loopback of the daemon's
// network namespace; two instances point their check at it with ::ffff:127.0.0.1, one on
// the NIC LXD attached (eth0), one on a veth it made itself (eth0 left without an
// address). Neither check ever connects to the host service: the first is refused by the
// dialer's destination policy, the second finds no address on a NIC LXD attached. As in
// TestHTTPAndTCPHealthChecks, all of it runs in a network namespace the test makes.
func TestHealthChecksNeverReachTheHost(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	netnsBridge(t, "10.77.0.1/24")

	// The host's own service, on the namespace's loopback only.
	var connections atomic.Int64
	listener, err := net.Listen("tcp", "127.0.0.1:8080")
	must(t, err)
	host := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("host secret")) }),
		ConnState: func(_ net.Conn, state http.ConnState) {
			if state == http.StateNew {
				connections.Add(1)
			}
		},
	}
	go func() { _ = host.Serve(listener) }()
	t.Cleanup(func() { _ = host.Close() })

	env := newGovernorEnv(t, 0, 3)
	env.lxd.Lxc(t, "profile", "device", "add", "default", "eth0", "nic", "nictype=bridged", "parent=br0", "name=eth0")
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Health = &api.DeploymentShapeHealth{HTTP: &api.DeploymentShapeHealthHTTP{Port: 8080, Path: "/"}, Interval: "1s", Timeout: "1s", Grace: "0s", UnhealthyThreshold: 1}
	})

	mapped, own := env.name("mapped"), env.name("own")
	run := func(instance string, command ...string) {
		t.Helper()
		code, stdout, stderr := env.exec(t, instance, command...)
		if code != 0 {
			t.Fatalf("%s: %v: exit %d: %s%s", instance, command, code, stdout, stderr)
		}
	}

	env.launch(t, env.gov, mapped)
	run(mapped, "ip", "link", "set", "eth0", "up")
	run(mapped, "ip", "addr", "add", "::ffff:127.0.0.1/128", "dev", "eth0")

	env.launch(t, env.gov, own)
	run(own, "ip", "link", "add", "evil0", "type", "veth")
	run(own, "ip", "link", "set", "evil0", "up")
	run(own, "ip", "addr", "add", "::ffff:127.0.0.1/128", "dev", "evil0")

	// LXD reports the address as global on both: what the daemon is given.
	for name, nic := range map[string]string{mapped: "eth0", own: "evil0"} {
		env.waitUntil(t, name+" reported with ::ffff:127.0.0.1 on "+nic, 30*time.Second, func() bool {
			state, _, err := env.lxdConn.GetInstanceState(name)
			must(t, err)
			for _, addr := range state.Network[nic].Addresses {
				if addr.Address == "::ffff:127.0.0.1" && addr.Scope == "global" {
					return true
				}
			}

			return false
		})
	}

	// prefix is how the output of a check of this kind that ran begins.
	checked := func(prefix string) {
		env.waitUntil(t, prefix+" checks that ran and were refused", 30*time.Second, func() bool {
			byName := env.instancesByName(t)
			m, o := byName[mapped], byName[own]
			return m.HealthCheck != nil && o.HealthCheck != nil && strings.HasPrefix(m.HealthCheck.Output, prefix) &&
				strings.Contains(m.HealthCheck.Output, "health check destination not allowed: 127.0.0.1 is in 127.0.0.0/8 (loopback") &&
				strings.Contains(o.HealthCheck.Output, "no global address")
		}, showing(func() string {
			var seen []string
			for name, i := range env.instancesByName(t) {
				if i.HealthCheck != nil {
					seen = append(seen, fmt.Sprintf("%s: %s, output %q", name, i.Health, i.HealthCheck.Output))
				}
			}

			return strings.Join(seen, "; ")
		}))

		for name, i := range env.instancesByName(t) {
			if i.Health == api.HealthHealthy || strings.Contains(i.HealthCheck.Output, "host secret") {
				t.Fatalf("%s: %s, output %q", name, i.Health, i.HealthCheck.Output)
			}
		}
	}

	phase(t, "http", func(t *testing.T) { checked("GET http://127.0.0.1:8080/") })
	phase(t, "tcp", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) {
			put.Health = &api.DeploymentShapeHealth{TCP: &api.DeploymentShapeHealthTCP{Port: 8080}, Interval: "1s", Timeout: "1s", Grace: "0s", UnhealthyThreshold: 1}
		})

		checked("cannot connect to 127.0.0.1:8080")
	})

	if n := connections.Load(); n != 0 {
		t.Fatalf("the host's loopback service was connected to %d times", n)
	}
}
