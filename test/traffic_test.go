package test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestTrafficEndpointsAndDrain (issue 35, doc/traffic.md): a shape with traffic has
// endpoints, at the addresses LXD reports, serving once ready; their changes come on
// /1.0/events (type endpoints); an instance a governor deletes is draining first and
// stays in LXD until its drain is over, here (no front door, --front-door none) its whole
// drain timeout, across a crash of the daemon too. Everything runs in a network namespace
// the test makes, as TestHTTPAndTCPHealthChecks does.
func TestTrafficEndpointsAndDrain(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	netnsBridge(t, "10.78.0.1/24")

	const drain = 8 * time.Second
	args := []string{"--front-door", "none", "--reconcile-interval", "1s"}
	env := newGovernorEnv(t, 0, 3, args...)
	env.lxd.Lxc(t, "profile", "device", "add", "default", "eth0", "nic", "nictype=bridged", "parent=br0", "name=eth0")
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Traffic = &api.DeploymentShapeTraffic{Port: 8080, Protocol: "http", Listen: "127.0.0.1:18080", DrainTimeout: drain.String()}
	})

	// Endpoint events, as a load balancer following the API would get them.
	var mu sync.Mutex
	var events []api.DeploymentShapeEndpointsEvent
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		_ = env.gov.GetEvents(ctx, client.EventsArgs{Types: []string{api.EventTypeEndpoints}}, func(e lxdapi.Event) {
			var m api.DeploymentShapeEndpointsEvent
			if json.Unmarshal(e.Metadata, &m) == nil {
				mu.Lock()
				events = append(events, m)
				mu.Unlock()
			}
		})
	}()

	a, b := env.name("a"), env.name("b")
	for i, name := range []string{a, b} {
		env.launch(t, env.gov, name)
		env.exec(t, name, "ip", "addr", "add", fmt.Sprintf("10.78.0.%d/24", 10+i), "dev", "eth0")
		env.exec(t, name, "ip", "link", "set", "eth0", "up")
		env.exec(t, name, "mkdir", "-p", "/www")
		env.pushFile(t, name, "/www/index.html", []byte(name+"\n"), 0o644)
		env.exec(t, name, "httpd", "-p", "8080", "-h", "/www")
	}

	endpoints := func() map[string]api.DeploymentShapeEndpoint {
		list, err := env.gov.GetDeploymentShapeEndpoints("dep1", "web")
		must(t, err)
		byName := map[string]api.DeploymentShapeEndpoint{}
		for _, e := range list {
			byName[e.Instance] = e
		}

		return byName
	}

	show := showing(func() string { return fmt.Sprintf("%+v", endpoints()) })
	phase(t, "serving at LXD's addresses", func(t *testing.T) {
		env.waitUntil(t, "both serving", 30*time.Second, func() bool {
			e := endpoints()
			return e[a] == api.DeploymentShapeEndpoint{Instance: a, Address: "10.78.0.10", Port: 8080, State: api.EndpointServing} &&
				e[b] == api.DeploymentShapeEndpoint{Instance: b, Address: "10.78.0.11", Port: 8080, State: api.EndpointServing}
		}, show)

		env.waitUntil(t, "an event with both serving", 30*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range events {
				serving := 0
				for _, endpoint := range e.Endpoints {
					if endpoint.State == api.EndpointServing {
						serving++
					}
				}

				if e.Deployment == "dep1" && e.Shape == "web" && serving == 2 {
					return true
				}
			}

			return false
		})
	})

	phase(t, "a delete drains first", func(t *testing.T) {
		asked := time.Now()
		op, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", b)
		must(t, err)
		env.waitUntil(t, "b draining", 30*time.Second, func() bool { return endpoints()[b].State == api.EndpointDraining }, show)
		if endpoints()[a].State != api.EndpointServing {
			t.Fatalf("a stopped serving: %+v", endpoints())
		}

		// b stays in LXD for its whole drain (no door reports its sessions), then goes.
		var gone time.Time
		env.waitUntil(t, "b deleted in LXD", drain+60*time.Second, func() bool {
			_, _, err := env.lxdConn.GetInstance(b)
			if err != nil && gone.IsZero() {
				gone = time.Now()
			}

			return err != nil
		})
		must(t, op.Wait(context.Background()))
		if took := gone.Sub(asked); took < drain {
			t.Fatalf("b was deleted %v after the delete was asked, before its drain timeout (%v) passed", took, drain)
		}

		t.Logf("measured: b deleted %v after the delete was asked (drain timeout %v)", gone.Sub(asked).Round(100*time.Millisecond), drain)
		if _, ok := endpoints()[b]; ok {
			t.Fatalf("a deleted instance is still an endpoint: %+v", endpoints())
		}
	})

	phase(t, "a drain continues across a crash", func(t *testing.T) {
		// a is draining when the daemon is killed: the restarted daemon deletes it once
		// the drain deadline recorded before the crash has passed, not at once.
		asked := time.Now()
		_, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", a)
		must(t, err)
		env.waitUntil(t, "a draining", 30*time.Second, func() bool { return endpoints()[a].State == api.EndpointDraining }, show)
		env.d.Kill(t)
		env.d.Start(t, args...)
		var gone time.Time
		env.waitUntil(t, "a deleted in LXD after the restart", drain+90*time.Second, func() bool {
			_, _, err := env.lxdConn.GetInstance(a)
			if err != nil && gone.IsZero() {
				gone = time.Now()
			}

			return err != nil
		})
		if took := gone.Sub(asked); took < drain {
			t.Fatalf("a was deleted %v after the delete was asked, before its drain timeout (%v) passed", took, drain)
		}

		t.Logf("measured: a deleted %v after the delete was asked, across a kill -9 and restart (drain timeout %v)", gone.Sub(asked).Round(100*time.Millisecond), drain)
		env.waitUntil(t, "a's record gone", 30*time.Second, func() bool { _, ok := endpoints()[a]; return !ok }, show)
	})

	phase(t, "no traffic, no endpoints", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) { put.Traffic = nil })
		_, err := env.gov.GetDeploymentShapeEndpoints("dep1", "web")
		if err == nil {
			t.Fatal("a shape without traffic has endpoints")
		}
	})
}
