package health

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestProbeNeverDialsTheHost: root inside an instance chooses the addresses LXD reports
// for it (issue 32: ::ffff:127.0.0.1 on an interface it added made the http check fetch the
// host's loopback service and store its answer). http and tcp checks refuse the host's
// loopback, in any spelling, in the dialer: a service listening there is never connected
// to, and the check fails saying why. (Link-local, metadata and multicast addresses are
// refused by the same policy, tested as a function in dialpolicy: they are never dialled
// by a test.)
func TestProbeNeverDialsTheHost(t *testing.T) {
	var connections atomic.Int64
	host := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("host secret"))
	}))
	host.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			connections.Add(1)
		}
	}
	host.Start()
	defer host.Close()
	port := int(netip.MustParseAddrPort(host.Listener.Addr().String()).Port())

	addrs := []string{"127.0.0.1", "::ffff:127.0.0.1", "127.1.2.3", "0.0.0.0", "::ffff:0.0.0.0"}
	v6, err := net.Listen("tcp", "[::1]:0")
	if err == nil {
		_ = v6.Close()
		addrs = append(addrs, "::1")
	}

	for _, kind := range []string{api.HealthKindHTTP, api.HealthKindTCP} {
		for _, a := range addrs {
			s := Settings{Kind: kind, Port: port, Path: "/", Timeout: 2 * time.Second}
			r := Probe(context.Background(), s, netip.MustParseAddr(a))
			if r.Passed || r.ExitCode == 0 || !strings.Contains(r.Output, "health check destination not allowed") || strings.Contains(r.Output, "host secret") {
				t.Errorf("%s check of %s: passed %v, output %q", kind, a, r.Passed, r.Output)
			}
		}
	}

	if n := connections.Load(); n != 0 {
		t.Fatalf("the host's loopback service was connected to %d times", n)
	}
}

// TestAddressesOnlyOfAttachedNICs: only interfaces LXD attached as nic devices give a
// check its address (by name in a container, by MAC address in a VM); an interface root
// made inside the instance is ignored whatever it carries, and a mapped address counts as
// the IPv4 address it carries (which the dialer then judges).
func TestAddressesOnlyOfAttachedNICs(t *testing.T) {
	body := `{"type":"sync","status_code":200,"metadata":[
		{"name":"nonic","type":"container","expanded_devices":{"root":{"type":"disk","path":"/","pool":"default"}},"state":{"network":{
			"evil0":{"addresses":[{"family":"inet6","address":"::ffff:127.0.0.1","scope":"global"}]}}}},
		{"name":"extra","type":"container","expanded_devices":{"eth0":{"type":"nic","name":"eth0"}},"state":{"network":{
			"evil0":{"addresses":[{"family":"inet","address":"169.254.169.254","scope":"global"}]},
			"eth0":{"addresses":[{"family":"inet6","address":"fd42::9","scope":"global"}]}}}},
		{"name":"renamed","type":"container","config":{"volatile.net.name":"eth1"},"expanded_devices":{"net":{"type":"nic"}},"state":{"network":{
			"eth0":{"addresses":[{"family":"inet","address":"10.0.3.66","scope":"global"}]},
			"eth1":{"addresses":[{"family":"inet","address":"10.0.3.7","scope":"global"}]}}}},
		{"name":"mapped","type":"container","expanded_devices":{"eth0":{"type":"nic","name":"eth0"}},"state":{"network":{
			"eth0":{"addresses":[{"family":"inet6","address":"::ffff:127.0.0.1","scope":"global"},{"family":"inet6","address":"fd42::8","scope":"global"}]}}}},
		{"name":"vm","type":"virtual-machine","config":{"volatile.eth0.hwaddr":"00:16:3e:aa:bb:cc"},"expanded_devices":{"eth0":{"type":"nic","network":"lxdbr0"}},"state":{"network":{
			"enp9s0":{"hwaddr":"00:16:3E:AA:BB:CC","addresses":[{"family":"inet","address":"10.0.3.8","scope":"global"}]},
			"enp10s0":{"hwaddr":"00:16:3e:00:00:01","addresses":[{"family":"inet","address":"10.0.3.99","scope":"global"}]}}}}]}`
	want := map[string]string{"nonic": "", "extra": "fd42::9", "renamed": "10.0.3.7", "mapped": "127.0.0.1", "vm": "10.0.3.8"}
	for name, addr := range want {
		got, err := lookup(body, name)
		if addr == "" {
			if err == nil || !strings.Contains(err.Error(), "no global address") {
				t.Errorf("%s: got %v %v, want no address", name, got, err)
			}

			continue
		}

		if err != nil || got.String() != addr {
			t.Errorf("%s: got %v %v, want %s", name, got, err, addr)
		}
	}

	// The mapped loopback address is refused when dialled.
	r := Probe(context.Background(), Settings{Kind: api.HealthKindTCP, Port: 1, Timeout: time.Second}, netip.MustParseAddr("127.0.0.1"))
	if r.Passed || !strings.Contains(r.Output, "loopback") {
		t.Errorf("the mapped instance's check: %+v", r)
	}
}
