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

// startOperatorHAProxy runs an HAProxy as an operator would configure it: their own
// frontend and backend (with a static server of their own), an admin socket; no
// master-worker, no files of the door's.
func startOperatorHAProxy(t *testing.T, listen string, own *backend) string {
	t.Helper()
	needHAProxy(t)
	dir, err := os.MkdirTemp("", "op")
	if err != nil {
		t.Fatal(err)
	}
	admin := filepath.Join(dir, "admin.sock")
	cfg := fmt.Sprintf(`global
    stats socket %s mode 600 level admin
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
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout
    server own 127.0.0.1:%d check inter 500ms
`, admin, listen, own.port)
	path := filepath.Join(dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("haproxy", "-db", "-f", path)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		os.RemoveAll(dir)
	})
	waitFor(t, "the operator's haproxy to answer", func() bool {
		_, err := command(context.Background(), admin, "show info")
		return err == nil
	})
	return admin
}

// TestOperator fills an operator's backend with the door's servers, drains and removes
// them, and leaves the operator's own server alone.
func TestOperator(t *testing.T) {
	own, a, b := startBackend(t, "own"), startBackend(t, "a"), startBackend(t, "b")
	listen := freePort(t)
	admin := startOperatorHAProxy(t, listen, own)
	o, err := NewOperator(context.Background(), admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + listen + "/"
	fe := frontdoor.Frontend{Key: "default/web/front", Backend: "app", Protocol: "http",
		Servers: []frontdoor.Server{server(a, frontdoor.StateServing), server(b, frontdoor.StateServing)}}
	apply(t, o, fe)
	seen := map[string]bool{}
	waitFor(t, "requests to reach the door's servers and the operator's", func() bool {
		_, by := get(t, url)
		seen[by] = true
		return seen["a"] && seen["b"] && seen["own"]
	})
	st, err := o.Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st[fe.Key].Servers["a"]; !ok || len(st[fe.Key].Servers) != 2 {
		t.Errorf("stats of the operator's backend: %+v (want a and b only)", st)
	}

	fe.Servers = []frontdoor.Server{server(a, frontdoor.StateDraining), server(b, frontdoor.StateServing)}
	apply(t, o, fe)
	before := a.served.Load()
	for i := 0; i < 30; i++ {
		if code, by := get(t, url); code != 200 || by == "a" {
			t.Fatalf("request %d while a drains: %d from %q", i, code, by)
		}
	}
	if a.served.Load() != before {
		t.Error("the draining server took new requests")
	}

	// The daemon restarts: a new Operator finds its servers by their names.
	o2, err := NewOperator(context.Background(), admin, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every door server to go", func() bool {
		apply(t, o2)
		return !hasServer(t, admin, "app", "a") && !hasServer(t, admin, "app", "b")
	})
	if !hasOwn(t, admin) {
		t.Error("the door removed the operator's own server")
	}
	if code, by := get(t, url); code != 200 || by != "own" {
		t.Errorf("after the door let go: %d from %q", code, by)
	}
	// A backend the operator does not have is an error saying so.
	fe.Backend = "nope"
	if err := o2.Apply(context.Background(), []frontdoor.Frontend{fe}); err == nil {
		t.Error("filling a backend the operator's haproxy lacks succeeded")
	} else {
		t.Logf("a missing backend: %v", err)
	}
}

func hasOwn(t *testing.T, admin string) bool {
	st, err := serversState(context.Background(), admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if s.Backend == "app" && s.Name == "own" {
			return true
		}
	}
	return false
}
