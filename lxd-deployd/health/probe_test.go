package health

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/dialpolicy"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestProbe runs http and tcp checks against loopback servers: 2xx and 3xx pass (a
// redirect is not followed), 5xx fails with the status and body, a closed port and a
// server slower than the timeout fail.
func TestProbe(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("fine")) })
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/nowhere", http.StatusFound) })
	mux.HandleFunc("/sick", func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "db down", http.StatusServiceUnavailable) })
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	server := httptest.NewServer(mux)
	defer server.Close()
	addrPort := netip.MustParseAddrPort(server.Listener.Addr().String())

	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	closedPort := closed.Addr().(*net.TCPAddr).Port
	_ = closed.Close()

	cases := []struct {
		kind   string
		port   int
		path   string
		passed bool
		output string
	}{
		{api.HealthKindHTTP, int(addrPort.Port()), "/ok", true, "HTTP 200: fine"},
		{api.HealthKindHTTP, int(addrPort.Port()), "/moved", true, "HTTP 302"},
		{api.HealthKindHTTP, int(addrPort.Port()), "/sick", false, "HTTP 503: db down"},
		{api.HealthKindHTTP, int(addrPort.Port()), "/slow", false, "deadline exceeded"},
		{api.HealthKindHTTP, closedPort, "/", false, "refused"},
		{api.HealthKindTCP, int(addrPort.Port()), "", true, "connected to 127.0.0.1:"},
		{api.HealthKindTCP, closedPort, "", false, "refused"},
	}

	// The servers can only be on loopback, which checks refuse (TestProbeNeverDialsTheHost):
	// this prober allows it explicitly.
	loopback := newProber(dialpolicy.Policy{Allowed: []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}, Err: ErrDestination})
	for _, c := range cases {
		s := Settings{Kind: c.kind, Port: c.port, Path: c.path, Timeout: 300 * time.Millisecond}
		r := loopback.probe(context.Background(), s, addrPort.Addr())
		if r.Passed != c.passed || !strings.Contains(r.Output, c.output) || (r.Passed != (r.ExitCode == 0)) {
			t.Errorf("%s %d%s: passed %v exit %d output %q, want passed %v and %q", c.kind, c.port, c.path, r.Passed, r.ExitCode, r.Output, c.passed, c.output)
		}
	}
}

// fakeLXD answers a recursion=2 instance listing as LXD 5.0 does.
type fakeLXD struct{ body string }

func (f fakeLXD) DoHTTP(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	if req.URL.Path != "/1.0/instances" || req.URL.Query().Get("recursion") != "2" || req.URL.Query().Get("project") != "p1" {
		rec.WriteHeader(http.StatusNotFound)
		_, _ = rec.WriteString(`{"type":"error","error":"not found","error_code":404}`)
		return rec.Result(), nil
	}

	_, _ = rec.WriteString(f.body)
	return rec.Result(), nil
}

// TestAddressLookup: one listing serves every instance of a project; an instance's address
// is its first global IPv4 address off lo, else a global IPv6 one; an instance without
// one (no network, or stopped) gets an error saying what to do.
func TestAddressLookup(t *testing.T) {
	body := `{"type":"sync","status_code":200,"metadata":[
		{"name":"a","type":"container","expanded_devices":{"eth0":{"type":"nic","name":"eth0","nictype":"bridged","parent":"lxdbr0"}},"state":{"network":{"lo":{"addresses":[{"family":"inet","address":"127.0.0.1","scope":"local"}]},
			"eth0":{"addresses":[{"family":"inet6","address":"fe80::1","scope":"link"},{"family":"inet","address":"10.0.3.5","scope":"global"}]}}}},
		{"name":"b","type":"container","config":{"volatile.eth0.name":"eth0"},"expanded_devices":{"eth0":{"type":"nic","network":"lxdbr0"}},"state":{"network":{"eth0":{"addresses":[{"family":"inet6","address":"fd42::7","scope":"global"}]}}}},
		{"name":"c","state":{"network":{"lo":{"addresses":[{"family":"inet","address":"127.0.0.1","scope":"local"}]}}}},
		{"name":"d","state":null}]}`
	want := map[string]string{"a": "10.0.3.5", "b": "fd42::7"}
	for _, name := range []string{"a", "b", "c", "d"} {
		addr, err := lookup(body, name)
		if want[name] == "" {
			if err == nil || !strings.Contains(err.Error(), "no global address") {
				t.Errorf("%s: want an error saying there is no address, got %v %v", name, addr, err)
			}

			continue
		}

		if err != nil || addr.String() != want[name] {
			t.Errorf("%s: got %v %v, want %s", name, addr, err, want[name])
		}
	}

	// A listing LXD did not give is no verdict (errNoListing), not an instance without an
	// address. (That one listing serves a project's checks for addressAge is the observed
	// snapshot's: observed.TestServingSharesOneListing.)
	if addr, err := lookup("not json", "a"); !errors.Is(err, errNoListing) {
		t.Errorf("a broken listing: %v %v", addr, err)
	}
}

// lookup finds name's address in one listing of project p1 that LXD answers with body, as
// the checker does in the observed listing.
func lookup(body string, name string) (netip.Addr, error) {
	listing, err := backend.ListInstanceServing(context.Background(), fakeLXD{body: body}, "p1")
	return addressOf(listing, err, name)
}
