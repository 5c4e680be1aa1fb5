package haproxy

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
)

// TestDoorProcess is the "daemon" TestPrivateSurvivesKill kills: run in a child process of
// the test binary, it opens the private door, applies the picture it is given, says so,
// and waits to be killed. Run on its own it does nothing.
func TestDoorProcess(t *testing.T) {
	dir := os.Getenv("FRONTDOOR_CHILD_DIR")
	if dir == "" {
		t.Skip("the child of TestPrivateSurvivesKill: nothing to do on its own")
	}
	var fs []frontdoor.Frontend
	if err := json.Unmarshal([]byte(os.Getenv("FRONTDOOR_CHILD_PICTURE")), &fs); err != nil {
		t.Fatal(err)
	}
	d, err := NewPrivate(context.Background(), PrivateConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Apply(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("door ready\n")
	select {}
}

// TestPrivateSurvivesKill: the process that started the private haproxy is killed with
// SIGKILL under constant load; haproxy keeps serving, and a new door adopts it. Not one
// request fails.
func TestPrivateSurvivesKill(t *testing.T) {
	needHAProxy(t)
	dir, err := os.MkdirTemp("", "fdk")
	if err != nil {
		t.Fatal(err)
	}
	// Registered first, so it runs after the cleanup that stops haproxy (which needs the
	// pid file).
	t.Cleanup(func() { os.RemoveAll(dir) })
	a, b := startBackend(t, "a"), startBackend(t, "b")
	listen := freePort(t)
	fs := []frontdoor.Frontend{{Key: "default/web/front", Listen: listen, Protocol: "http",
		Servers: []frontdoor.Server{server(a, frontdoor.StateServing), server(b, frontdoor.StateServing)}}}
	picture, _ := json.Marshal(fs)

	child := exec.Command(os.Args[0], "-test.run=^TestDoorProcess$", "-test.count=1")
	child.Env = append(os.Environ(), "FRONTDOOR_CHILD_DIR="+dir, "FRONTDOOR_CHILD_PICTURE="+string(picture))
	child.Stderr = os.Stderr
	out, err := child.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	ready := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "door ready") {
			ready = true
			break
		}
	}
	if !ready {
		child.Process.Kill()
		child.Wait()
		t.Fatal("the child door process never said it was ready")
	}

	d, err := NewPrivate(context.Background(), PrivateConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pid := d.Pid()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		d.Stop(ctx)
	})

	l := startLoad("http://"+listen+"/", 200)
	waitFor(t, "load to flow", func() bool { ok, _, _ := l.counts(); return ok > 100 })
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	okAtKill, _, _ := l.counts()
	waitFor(t, "load to flow with its daemon dead", func() bool { ok, _, _ := l.counts(); return ok > okAtKill+200 })
	if d.Pid() != pid {
		t.Fatalf("haproxy %d went with the process that started it (now %d)", pid, d.Pid())
	}
	// The restarted daemon: a new door adopts and applies its picture.
	d2, err := NewPrivate(context.Background(), PrivateConfig{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	fs[0].Servers = fs[0].Servers[:1]
	if err := d2.Apply(context.Background(), fs); err != nil {
		t.Fatal(err)
	}
	okAtApply, _, _ := l.counts()
	waitFor(t, "load to flow after the adoption", func() bool { ok, _, _ := l.counts(); return ok > okAtApply+100 })
	l.stop()
	t.Logf("the door's process killed with SIGKILL under 200 requests/s, then adopted: %s", l.report())
	if _, fail, _ := l.counts(); fail > 0 {
		t.Errorf("requests failed: %s", l.report())
	}
	if d2.Pid() != pid {
		t.Errorf("the new door started haproxy %d instead of adopting %d", d2.Pid(), pid)
	}
}
