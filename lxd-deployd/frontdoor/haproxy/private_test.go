package haproxy

import (
	"context"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

// newPrivate starts a private door in a short directory (unix socket paths are short)
// and stops its haproxy when the test ends.
func newPrivate(t *testing.T) (*Private, string) {
	t.Helper()
	needHAProxy(t)
	dir, err := os.MkdirTemp("", "fd")
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewPrivate(context.Background(), PrivateConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// An idle keep-alive connection would hold a soft stop for its timeout (10 s).
		http.DefaultClient.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		if err := d.Stop(ctx); err != nil {
			t.Error(err)
		}
		if t.Failed() {
			if b, err := os.ReadFile(d.p.Log); err == nil {
				t.Logf("haproxy log:\n%s", b)
			}
		}
		os.RemoveAll(dir)
	})
	return d, dir
}

func server(b *backend, state string) frontdoor.Server {
	return frontdoor.Server{Name: b.name, Address: "127.0.0.1", Port: b.port, State: state}
}

func apply(t *testing.T, d frontdoor.Door, fs ...frontdoor.Frontend) {
	t.Helper()
	if err := d.Apply(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
}

// TestPrivateDrainAndRemove: servers added at run time take requests; a drained server
// finishes its open slow request and takes no new ones; a removed one is gone.
func TestPrivateDrainAndRemove(t *testing.T) {
	d, _ := newPrivate(t)
	a, b := startBackend(t, "a"), startBackend(t, "b")
	listen := freePort(t)
	url := "http://" + listen
	fe := frontdoor.Frontend{Key: "default/web/front", Listen: listen, Protocol: "http",
		Servers: []frontdoor.Server{server(a, frontdoor.StateServing), server(b, frontdoor.StateServing)}}
	apply(t, d, fe)
	pid := d.Pid()

	seen := map[string]bool{}
	waitFor(t, "requests through the door to reach both servers", func() bool {
		code, by := get(t, url+"/")
		if code != 200 {
			t.Fatalf("GET through the door: %d", code)
		}
		seen[by] = true
		return seen["a"] && seen["b"]
	})

	// b takes nothing for a moment so the slow request surely lands on a.
	fe.Servers = []frontdoor.Server{server(a, frontdoor.StateServing), server(b, frontdoor.StateNotReady)}
	apply(t, d, fe)
	slow := make(chan int, 1)
	go func() {
		resp, err := http.Get(url + "/slow")
		if err != nil {
			t.Errorf("the slow request on the drained server failed: %v", err)
			slow <- 0
			return
		}
		resp.Body.Close()
		slow <- resp.StatusCode
	}()
	waitFor(t, "the slow request to reach a", func() bool { return a.inSlow.Load() == 1 })

	fe.Servers = []frontdoor.Server{server(a, frontdoor.StateDraining), server(b, frontdoor.StateServing)}
	apply(t, d, fe)
	waitFor(t, "b to pass its check", func() bool {
		st, err := d.Stats(context.Background())
		return err == nil && st[fe.Key].Servers["b"].Up
	})
	st, err := d.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := frontdoor.Sessions(st, fe.Key, "a"); !ok || n != 1 {
		t.Errorf("draining a has %d open sessions (known %v), want its slow request", n, ok)
	}
	before := a.served.Load()
	for i := 0; i < 50; i++ {
		if code, by := get(t, url+"/"); code != 200 || by != "b" {
			t.Fatalf("request %d while a drains: %d from %q, want 200 from b", i, code, by)
		}
	}
	if a.served.Load() != before {
		t.Error("the draining server took new requests")
	}
	close(a.release)
	if code := <-slow; code != 200 {
		t.Errorf("the slow request on the draining server ended with %d, want 200", code)
	}
	waitFor(t, "a's last connection to close", func() bool {
		st, err := d.Stats(context.Background())
		n, _ := frontdoor.Sessions(st, fe.Key, "a")
		return err == nil && n == 0
	})

	fe.Servers = []frontdoor.Server{server(b, frontdoor.StateServing)}
	waitFor(t, "a to be deleted", func() bool {
		apply(t, d, fe)
		return !hasServer(t, d.AdminSocket(), backendName(fe.Key), "a")
	})
	if code, by := get(t, url+"/"); code != 200 || by != "b" {
		t.Errorf("after removing a: %d from %q", code, by)
	}
	if d.Pid() != pid {
		t.Errorf("server changes restarted haproxy (pid %d, now %d)", pid, d.Pid())
	}
	// Applying the same picture again changes nothing.
	apply(t, d, fe)
	apply(t, d, fe)
}

// TestPrivateAdoptAndReloadUnderLoad: under constant load, a new Door on the same
// directory (a restarted daemon) adopts the running haproxy, and frontends coming and
// going reload it gracefully: not one request fails.
func TestPrivateAdoptAndReloadUnderLoad(t *testing.T) {
	d, dir := newPrivate(t)
	a, b := startBackend(t, "a"), startBackend(t, "b")
	listen := freePort(t)
	fe := frontdoor.Frontend{Key: "default/web/front", Listen: listen, Protocol: "http", CheckPath: "/",
		Servers: []frontdoor.Server{server(a, frontdoor.StateServing), server(b, frontdoor.StateDraining)}}
	apply(t, d, fe)
	pid := d.Pid()
	if ppid := parentOf(t, pid); ppid == os.Getpid() {
		t.Errorf("haproxy %d is the daemon's child: it must outlive a kill -9 of the daemon", pid)
	}

	l := startLoad("http://"+listen+"/", 200)
	waitFor(t, "load to flow", func() bool { ok, _, _ := l.counts(); return ok > 100 })

	// The daemon restarts: a new Door adopts the same haproxy and applies its picture.
	d.Close()
	d2, err := NewPrivate(context.Background(), PrivateConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if d2.Pid() != pid {
		t.Fatalf("the new door started haproxy %d instead of adopting %d", d2.Pid(), pid)
	}
	fe.Servers = []frontdoor.Server{server(a, frontdoor.StateServing), server(b, frontdoor.StateServing)}
	apply(t, d2, fe)

	// A second shape's frontend needs a listener: a graceful reload, twice.
	c := startBackend(t, "c")
	other := frontdoor.Frontend{Key: "default/api/front", Listen: freePort(t), Protocol: "tcp",
		Servers: []frontdoor.Server{server(c, frontdoor.StateServing)}}
	for i := 0; i < 3; i++ {
		okBefore, _, _ := l.counts()
		if i%2 == 0 {
			apply(t, d2, fe, other)
		} else {
			apply(t, d2, fe)
		}
		waitFor(t, "load to flow after the reload", func() bool { ok, _, _ := l.counts(); return ok > okBefore+100 })
	}
	apply(t, d2, fe, other)
	if code, by := get(t, "http://"+other.Listen+"/"); code != 200 || by != "c" {
		t.Errorf("the tcp frontend added by a reload answered %d from %q", code, by)
	}
	// The drain state a server had survives a reload (server-state file).
	fe.Servers = []frontdoor.Server{server(a, frontdoor.StateServing), server(b, frontdoor.StateDraining)}
	apply(t, d2, fe, other)
	apply(t, d2, fe)
	st, err := serversState(context.Background(), d2.AdminSocket())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Name == serverName("b") && s.Admin&adminDrain == 0 {
			t.Errorf("b lost its drain across the reload: admin state %#x", s.Admin)
		}
	}
	okBefore, _, _ := l.counts()
	waitFor(t, "load to flow", func() bool { ok, _, _ := l.counts(); return ok > okBefore+100 })
	l.stop()
	t.Logf("through an adoption and 5 reloads: %s", l.report())
	if _, fail, by := l.counts(); fail > 0 || by["a"] == 0 {
		t.Errorf("requests failed: %s", l.report())
	}
	if d2.Pid() != pid {
		t.Errorf("the master changed (pid %d, now %d): reloads must keep it", pid, d2.Pid())
	}
}

// TestPrivateKilledBackend: a backend killed outright under load is taken out by
// haproxy's check; requests in flight to it are retried elsewhere.
func TestPrivateKilledBackend(t *testing.T) {
	d, _ := newPrivate(t)
	a, b, c := startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")
	listen := freePort(t)
	fe := frontdoor.Frontend{Key: "default/web/front", Listen: listen, Protocol: "http",
		Servers: []frontdoor.Server{server(a, frontdoor.StateServing), server(b, frontdoor.StateServing), server(c, frontdoor.StateServing)}}
	apply(t, d, fe)
	up := func(name string) bool {
		st, err := d.Stats(context.Background())
		return err == nil && st[fe.Key].Servers[name].Up
	}
	waitFor(t, "every server up", func() bool { return up("a") && up("b") && up("c") })
	l := startLoad("http://"+listen+"/", 200)
	waitFor(t, "load to reach b", func() bool { _, _, by := l.counts(); return by["b"] > 50 })

	b.kill()
	waitFor(t, "haproxy's check to take b out", func() bool { return !up("b") })
	_, failAtDown, _ := l.counts()
	okAtDown, _, _ := l.counts()
	waitFor(t, "load to flow without b", func() bool { ok, _, _ := l.counts(); return ok > okAtDown+200 })
	l.stop()
	_, fail, by := l.counts()
	t.Logf("b killed under 200 requests/s: %d failed before the check took it out, %d after; %s", failAtDown, fail-failAtDown, l.report())
	if fail > failAtDown {
		t.Errorf("%d requests failed after haproxy's check took b out", fail-failAtDown)
	}
	if fail > 0 {
		t.Errorf("retries and redispatch should have saved every request in flight to b: %s", l.report())
	}
	if by["a"] == 0 || by["c"] == 0 {
		t.Errorf("the survivors took no load: %v", by)
	}
}

func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

// TestPrivateColdStart: a stopped haproxy (a host rebooted) comes back serving the last
// picture before any Apply; one whose listener's port was taken meanwhile comes back
// empty and the next Apply brings it to the new picture.
func TestPrivateColdStart(t *testing.T) {
	d, dir := newPrivate(t)
	a := startBackend(t, "a")
	listen := freePort(t)
	fe := frontdoor.Frontend{Key: "default/web/front", Listen: listen, Protocol: "http",
		Servers: []frontdoor.Server{server(a, frontdoor.StateServing)}}
	apply(t, d, fe)
	stop := func() {
		// An idle keep-alive connection would hold a soft stop for its timeout (10 s).
		http.DefaultClient.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := d.Stop(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	d, err := NewPrivate(context.Background(), PrivateConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the last picture to serve again", func() bool {
		resp, err := http.Get("http://" + listen + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200 && resp.Header.Get("X-Backend") == "a"
	})
	stop()

	taken, err := net.Listen("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	d, err = NewPrivate(context.Background(), PrivateConfig{Dir: dir})
	if err != nil {
		t.Fatalf("a taken port kept the door from starting: %v", err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Stop(ctx)
	})
	fe.Listen = freePort(t)
	apply(t, d, fe)
	waitFor(t, "the new picture to serve", func() bool {
		resp, err := http.Get("http://" + fe.Listen + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	})
	// A listener HAProxy cannot bind is an error saying so, and the door keeps serving.
	busy := fe
	busy.Listen = taken.Addr().String()
	if err := d.Apply(context.Background(), []frontdoor.Frontend{busy}); err == nil {
		t.Error("a frontend on a taken port applied")
	} else {
		t.Logf("a taken port: %v", err)
	}
	apply(t, d, fe)
	if code, _ := get(t, "http://"+fe.Listen+"/"); code != 200 {
		t.Errorf("after a refused reload: %d", code)
	}
}
