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
		status, err := doorServerStatus(env.d.DataDir, names[0])
		must(t, err)
		if status != "" {
			t.Fatalf("the door still has a server for the deleted %s: %s", names[0], status)
		}

		load.check(t, "a delete after the restart")
	})
	load.stop()
}

// TestTrafficDoorInstanceKilled (issue 35): under constant load, an instance is stopped
// outright through LXD (lxc stop --force): the requests that fail are counted and printed
// (at most those in flight to it; HAProxy's retries usually save them all), and none sent
// after HAProxy's check took its server down fails.
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
	victim := names[0]
	// The moment the door has taken the server out (HAProxy's check or its observation of
	// real traffic marks it DOWN, or the doorkeeper puts it in MAINT or removes it, as the
	// stopped instance is not ready any more), watched from before the stop.
	type taken struct {
		at     time.Time
		status string
	}

	out := make(chan taken, 1)
	go func() {
		for {
			s, err := doorServerStatus(env.d.DataDir, victim)
			if err == nil && !strings.HasPrefix(s, "UP") {
				if s == "" {
					s = "removed by the doorkeeper"
				}

				out <- taken{time.Now(), s}
				return
			}

			time.Sleep(20 * time.Millisecond)
		}
	}()

	killed := time.Now()
	env.lxd.Lxc(t, "stop", "--force", victim)
	stopped := time.Now()
	var down time.Time
	var status string
	select {
	case o := <-out:
		down, status = o.at, o.status
	case <-time.After(time.Minute):
		t.Fatalf("the door still sends to %s a minute after it was stopped", victim)
	}

	// Requests go on well past it, while autohealing replaces the stopped instance.
	env.waitUntil(t, victim+" replaced", 3*time.Minute, func() bool {
		_, ok := env.endpoints()[victim]
		return !ok && env.serving() == 2
	}, showing(func() string { return strings.TrimSpace(env.d.Log()[max(0, len(env.d.Log())-3000):]) }))
	time.Sleep(3 * time.Second)
	load.stop()
	before, after := load.failedSentAfter(down)
	sent := load.sent.Load()
	t.Logf("measured: %s stopped with --force under load (lxc stop took %v): out of the door (%s) %v after the stop began; %d requests sent since the steady state, %d failed of those sent before it was out, %d of those sent after",
		victim, stopped.Sub(killed).Round(10*time.Millisecond), status, down.Sub(killed).Round(10*time.Millisecond), sent, before, after)
	if after > 0 {
		load.mu.Lock()
		errs := load.errors
		load.mu.Unlock()
		t.Fatalf("%d requests sent after HAProxy took %s out failed: %v\n%s", after, victim, errs, load.explain())
	}
}
