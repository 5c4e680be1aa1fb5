package haproxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

// A server's admin state, as show stat reports it, tells whether it takes new connections:
// what a member that does not drive a shared door reads to see a drain done.
func TestStatRowOut(t *testing.T) {
	for status, out := range map[string]bool{"UP": false, "UP 1/2": false, "DOWN": false, "no check": false, "NOLB": false,
		"DRAIN": true, "DRAIN (agent)": true, "MAINT": true, "MAINT (via be/s)": true, "MAINT (resolution)": true} {
		if got := (statRow{"status": status}).out(); got != out {
			t.Errorf("status %q: out %v, want %v", status, got, out)
		}
	}
}

// Follow files the named backends' figures by key without touching HAProxy.
func TestOperatorFollow(t *testing.T) {
	o := &Operator{admin: "/nonexistent", keyOf: map[string]string{}}
	err := o.Follow(context.Background(), []frontdoor.Frontend{{Key: "default/shop/web", Backend: "web", Protocol: "http"}})
	if err != nil {
		t.Fatal(err)
	}

	rows, err := parseStat("# pxname,svname,scur,status\nweb,ld-web1,0,DRAIN\nweb,ld-web2,4,UP\nother,ld-x,1,UP\n")
	if err != nil {
		t.Fatal(err)
	}

	got := statsFromRows(rows, func(be string) (string, bool) { k, ok := o.keyOf[be]; return k, ok })
	servers := got["default/shop/web"].Servers
	if len(got) != 1 || !servers["web1"].Out || servers["web1"].Sessions != 0 || servers["web2"].Out || servers["web2"].Sessions != 4 {
		t.Fatalf("stats %+v", got)
	}

	if err := o.Follow(context.Background(), []frontdoor.Frontend{{Key: "default/shop/web", Listen: "127.0.0.1:80", Protocol: "http"}}); err == nil {
		t.Fatal("an operator's door followed a frontend with a listener of its own")
	}
}

// An operator's HAProxy reached over a TCP admin socket (stats socket ipv4@...): one
// member drives it, another follows and sees the drained server out with no session.
func TestOperatorTCPSocketFollowed(t *testing.T) {
	needHAProxy(t)
	a, b := startBackend(t, "a"), startBackend(t, "b")
	listen, adminAddr := freePort(t), freePort(t)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`global
    stats socket ipv4@%s level admin
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
frontend www
    bind %s
    default_backend app
backend app
    balance roundrobin
    option httpchk GET /
`, adminAddr, listen)
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("haproxy", "-db", "-f", path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	waitFor(t, "the operator's haproxy to answer over TCP", func() bool {
		_, err := command(context.Background(), adminAddr, "show info")
		return err == nil
	})

	ctx := context.Background()
	driver, err := NewOperator(ctx, adminAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	follower, err := NewOperator(ctx, adminAddr, nil)
	if err != nil {
		t.Fatal(err)
	}
	fe := frontdoor.Frontend{Key: "default/web/front", Backend: "app", Protocol: "http",
		Servers: []frontdoor.Server{server(a, frontdoor.StateServing), server(b, frontdoor.StateDraining)}}
	apply(t, driver, fe)
	if err := follower.Follow(ctx, []frontdoor.Frontend{fe}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the follower to see a serving and b drained", func() bool {
		stats, err := follower.Stats(ctx)
		if err != nil {
			return false
		}
		servers := stats["default/web/front"].Servers
		return servers["a"].Up && !servers["a"].Out && servers["b"].Out && servers["b"].Sessions == 0
	})
}
