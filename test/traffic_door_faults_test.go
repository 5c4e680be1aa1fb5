package test

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// healthzCheck is the daemon's check of the fault tests: GET /healthz, which the test can
// make fail (remove the file: 404) while the instance keeps serving / (HAProxy's own check
// of the same path takes any answer below 500 as up).
func healthzCheck() *api.DeploymentShapeHealth {
	return &api.DeploymentShapeHealth{
		HTTP:     &api.DeploymentShapeHealthHTTP{Port: 8080, Path: "/healthz"},
		Interval: "1s", Timeout: "1s", Grace: "0s", UnhealthyThreshold: 2, Replace: true,
	}
}

// TestTrafficDoorAutohealing (issue 35): under constant load through the private door, an
// instance whose check fails while it still serves is replaced by autohealing (the new
// one made first, the old one drained, then deleted): no request fails.
func TestTrafficDoorAutohealing(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	env := newDoorEnv(t, 30*time.Second, healthzCheck(), "--reconcile-interval", "1s")
	names := env.startAt(t, 2)
	load := env.load()
	phase(t, "autohealing replaces an instance that still serves", func(t *testing.T) {
		time.Sleep(2 * time.Second)
		sick := names[0]
		env.exec(t, sick, "rm", "/www/healthz")
		env.waitUntil(t, sick+" replaced and deleted in LXD", 3*time.Minute, func() bool {
			_, _, err := env.lxdConn.GetInstance(sick)
			return err != nil
		}, showing(func() string { return strings.TrimSpace(env.d.Log()[max(0, len(env.d.Log())-3000):]) }))
		env.waitServing(t, 2)
		if _, ok := env.endpoints()[names[1]]; !ok {
			t.Fatalf("the healthy instance %s was replaced too: %+v", names[1], env.endpoints())
		}

		time.Sleep(2 * time.Second)
		load.check(t, "an autohealing replacement")
	})
	load.stop()
}

// TestTrafficDoorDaemonKilled (issue 35): the data path never passes through the daemon.
// Under constant load, the daemon is killed (kill -9) and started again: the private
// HAProxy outlives it and is adopted (the same process), and no request fails, then or
// while the restarted daemon drains an instance out of the adopted door.
func TestTrafficDoorDaemonKilled(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	env := newDoorEnv(t, 30*time.Second, healthzCheck())
	names := env.startAt(t, 3)
	pid := func() string {
		b, _ := os.ReadFile(env.d.DataDir + "/frontdoor/haproxy.pid")
		return strings.TrimSpace(string(b))
	}

	before := pid()
	load := env.load()
	phase(t, "kill -9 and restart", func(t *testing.T) {
		time.Sleep(2 * time.Second)
		env.d.Kill(t)
		// Load goes on with no daemon at all.
		time.Sleep(3 * time.Second)
		env.d.Start(t)
		env.waitServing(t, 3)
		time.Sleep(3 * time.Second)
		if after := pid(); before == "" || after != before {
			t.Fatalf("the private HAProxy was not adopted: pid %q before the kill, %q after the restart", before, after)
		}

		load.check(t, "a kill -9 and restart of the daemon")
	})

	phase(t, "the restarted daemon drains through the adopted door", func(t *testing.T) {
		op, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", names[0])
		must(t, err)
		must(t, op.Wait(t.Context()))
		env.waitServing(t, 2)
		// The door drops the server (drained, so sent nothing new) at the doorkeeper's
		// next round after the instance went.
		env.waitUntil(t, "the adopted door without a server for "+names[0], 30*time.Second, func() bool {
			status, err := doorServerStatus(env.d.DataDir, names[0])
			return err == nil && status == ""
		})

		load.check(t, "a delete after the restart")
	})
	load.stop()
}

// TestTrafficDoorInstanceKilled (issue 35): under constant load, an instance dies outright,
// twice: its container stopped through LXD (lxc stop --force), then another's server killed
// (kill -9 httpd) while its container runs on, which only HAProxy's check (or its
// observation of real traffic) sees at first. The requests that fail are counted and
// printed (at most those in flight to it; HAProxy's retries may save them all), and none
// sent after the door took its server out may fail.
func TestTrafficDoorInstanceKilled(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	env := newDoorEnv(t, 30*time.Second, healthzCheck(), "--reconcile-interval", "1s")
	names := env.startAt(t, 2)
	load := env.load()
	time.Sleep(2 * time.Second)
	load.check(t, "the steady state")
	stop := env.killUnderLoad(t, names[0], "its container stopped with --force", func() {
		env.lxd.Lxc(t, "stop", "--force", names[0])
	})
	kill := env.killUnderLoad(t, names[1], "its httpd killed with -9", func() {
		env.exec(t, names[1], "killall", "-9", "httpd")
	})
	end := time.Now()
	load.stop()
	sent := load.sent.Load()
	t.Logf("measured: %d requests sent through the door over both kills", sent)
	failedAfter := 0
	for i, k := range []killed{stop, kill} {
		until := end
		if i == 0 {
			until = kill.began
		}

		before := load.failedSent(k.began, k.out)
		after := load.failedSent(k.out, until)
		failedAfter += after
		t.Logf("measured: %s %s under load: out of the door (%s) %v after; %d requests failed of those sent before, %d of those sent after",
			k.instance, k.how, k.status, k.out.Sub(k.began).Round(10*time.Millisecond), before, after)
	}

	if failedAfter > 0 {
		load.mu.Lock()
		errs := load.errors
		load.mu.Unlock()
		t.Fatalf("%d requests sent after the door took a dead instance out failed: %v\n%s", failedAfter, errs, load.explain())
	}
}

// killed is one instance killed under load: when, and when the door had its server out.
type killed struct {
	instance, how, status string
	began, out            time.Time
}

// killUnderLoad kills an instance (kill), waits until the door has its server out (HAProxy
// marks it DOWN, by its check or by errors on real traffic; or the doorkeeper puts it in
// MAINT or removes it once the instance is not ready), watched from before the kill, then
// until autohealing has replaced it and two serve again.
func (e *doorEnv) killUnderLoad(t *testing.T, instance string, how string, kill func()) killed {
	t.Helper()
	out := make(chan killed, 1)
	gaveUp := make(chan struct{})
	defer close(gaveUp)
	go func() {
		// Until the door has the server out, or the select below gave up on it.
		poll(time.Hour, func() bool {
			select {
			case <-gaveUp:
				return true
			default:
			}

			s, err := doorServerStatus(e.d.DataDir, instance)
			if err == nil && !strings.HasPrefix(s, "UP") {
				if s == "" {
					s = "removed by the doorkeeper"
				}

				out <- killed{status: s, out: time.Now()}
				return true
			}

			return false
		}, every(20*time.Millisecond))
	}()

	k := killed{instance: instance, how: how, began: time.Now()}
	kill()
	select {
	case o := <-out:
		k.status, k.out = o.status, o.out
	case <-time.After(time.Minute):
		t.Fatalf("the door still sends to %s a minute after %s", instance, how)
	}

	// Requests go on well past it, while autohealing replaces the dead instance.
	e.waitUntil(t, instance+" replaced", 3*time.Minute, func() bool {
		_, ok := e.endpoints()[instance]
		return !ok && e.serving() == 2
	}, showing(func() string { return strings.TrimSpace(e.d.Log()[max(0, len(e.d.Log())-3000):]) }))
	time.Sleep(3 * time.Second)
	return k
}
