package test

import (
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestAutohealing: an instance whose check starts failing becomes unhealthy and is
// replaced, an instance deleted behind the daemon's back is replaced, the shape's size never
// changes, and a shape where every replacement fails stops after 3 and is degraded.
func TestAutohealing(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3, "--reconcile-interval", "1s")
	hook := env.hookTo(t)

	// Replacements show on /1.0/events, read here with LXD's own client.
	replaced := make(chan lxdapi.EventLifecycle, 10)
	env.d.onLifecycle(t, "admin", func(lifecycle lxdapi.EventLifecycle) {
		if lifecycle.Action == "deployment-instance-replaced" {
			replaced <- lifecycle
		}
	})

	a, b := env.name("a"), env.name("b")
	sizeHeld := func(t testing.TB) bool {
		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		if shape.ScalingCurrent > 2 {
			t.Fatalf("autohealing changed the size: %d instances", shape.ScalingCurrent)
		}

		return shape.ScalingCurrent == 2
	}

	// Bad health objects are refused and change nothing.
	phase(t, "bad health objects", func(t *testing.T) {
		shape, etag, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		for _, bad := range []api.DeploymentShapeHealth{
			{},
			{Command: []string{"true"}, Interval: "10"},
			{Command: []string{"true"}, Interval: "1ms"},
			{Command: []string{"true"}, UnhealthyThreshold: -1},
		} {
			put := shape.Writable()
			put.Health = &bad
			expectCode(t, env.admin.UpdateDeploymentShape("dep1", "web", put, etag), 400, "bad health object")
		}
	})

	// A check that outlives its timeout fails, and its process is killed. The interval is
	// long enough that the next check's own `sleep 600` does not start before the kill is
	// seen: with 1 s, the instance was without one for as little as 60 ms between a kill and
	// the next check, and the test's `ps` missed it on a loaded machine.
	phase(t, "a timed out check", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) {
			put.Health = &api.DeploymentShapeHealth{Command: []string{"sleep", "600"}, Interval: "10s", Timeout: "500ms"}
		})

		env.launch(t, env.gov, a)
		env.waitUntil(t, "a check that timed out", 30*time.Second, func() bool {
			check := env.instancesByName(t)[a].HealthCheck
			return check != nil && strings.Contains(check.Output, "timeout")
		})

		env.waitUntil(t, "the timed out check killed", 10*time.Second, func() bool {
			_, ps, _ := env.exec(t, a, "ps")
			return !strings.Contains(ps, "sleep 600")
		})
	})

	phase(t, "healthy instances", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) {
			put.Health = sickFileHealth()
		})

		env.launch(t, env.gov, b)
		env.waitUntil(t, "both instances healthy", 30*time.Second, func() bool {
			byName := env.instancesByName(t)
			return byName[a].Health == api.HealthHealthy && byName[b].Health == api.HealthHealthy
		})

		u := newCLIUser(t, env.d)
		if out := u.ok("deployment", "shape", "health", "dep1", "web"); !contains(out, "| HEALTH", "| "+a+" | healthy", "| ok") {
			t.Errorf("shape health:\n%s", out)
		}

		one, err := env.admin.GetDeploymentShapeInstance("dep1", "web", a)
		must(t, err)
		if one.HealthCheck == nil || one.HealthCheck.CheckedAt == nil || !strings.Contains(one.HealthCheck.Output, "ok") {
			t.Fatalf("the instance must report its last check: %+v", one.HealthCheck)
		}

		// The check's output is for admins: a read-only key sees the verdict and when.
		one, err = env.readOnly.GetDeploymentShapeInstance("dep1", "web", a)
		must(t, err)
		if one.HealthCheck == nil || one.HealthCheck.CheckedAt == nil || one.HealthCheck.Status != api.HealthHealthy || one.HealthCheck.Output != "" {
			t.Fatalf("a read-only key must see the last check's verdict, not its output: %+v", one.HealthCheck)
		}
	})

	// a's service dies: unhealthy after two failed checks, then replaced.
	phase(t, "an unhealthy instance replaced", func(t *testing.T) {
		env.exec(t, a, "touch", "/tmp/sick")
		hook.waitFor("unhealthy", 20*time.Second, lifecycleEvent("deployment-instance-unhealthy", a))
		var replacement string
		env.waitUntil(t, "the unhealthy instance replaced by a healthy one", 60*time.Second, func() bool {
			byName := env.instancesByName(t)
			sizeHeld(t)
			_, old := byName[a]
			replacement = healthyReplacement(byName, a)

			return !old && replacement != "" && len(byName) == 2
		})

		select {
		case e := <-replaced:
			cause, _ := e.Context["cause"].(string)
			if !strings.HasSuffix(e.Source, "/instances/"+a) || !strings.Contains(cause, "unhealthy") || e.Context["replacement"] != replacement || e.Requestor == nil || e.Requestor.Username != "autoheal" {
				t.Fatalf("replacement event on /1.0/events: %+v", e)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no replacement event on /1.0/events")
		}

		event := hook.waitFor("replaced", 20*time.Second, lifecycleEvent("deployment-instance-replaced", a))
		var m api.WebhookLifecycleMetadata
		must(t, json.Unmarshal(event.Metadata, &m))
		if !strings.Contains(m.Reason, "unhealthy") || !strings.Contains(m.Reason, replacement) {
			t.Fatalf("a replacement says why and by what: %+v", m)
		}

		if _, ok := env.lxdInstances(t)[a]; ok {
			t.Fatalf("the replaced instance %s is still in LXD", a)
		}
	})

	// b vanishes behind the daemon's back (protection lifted by hand): replaced too.
	phase(t, "a missing instance replaced", func(t *testing.T) {
		instance, _, err := env.lxdConn.GetInstance(b)
		must(t, err)
		put := instance.Writable()
		delete(put.Config, "security.protection.delete")
		op, err := env.lxdConn.UpdateInstance(b, put, "")
		must(t, err)
		must(t, op.Wait())
		op, err = env.lxdConn.UpdateInstanceState(b, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
		must(t, err)
		must(t, op.Wait())
		op, err = env.lxdConn.DeleteInstance(b)
		must(t, err)
		must(t, op.Wait())
		env.waitUntil(t, "the missing instance replaced", 60*time.Second, func() bool {
			byName := env.instancesByName(t)
			_, old := byName[b]
			for name, instance := range byName {
				if strings.HasPrefix(name, b+"-r") && instance.State == "created" {
					return !old && len(byName) == 2 && sizeHeld(t)
				}
			}

			return false
		})

		hook.waitFor("replaced missing", 20*time.Second, lifecycleEvent("deployment-instance-replaced", b))
	})

	// Every instance fails: replacements that never become healthy stop after three and
	// the shape is degraded, at its size. With every instance failing at once autohealing
	// would hold by default (health.hold_share, TestAutohealingHolds); hold_share 1 turns
	// the holds off, as an operator sure of a broken image would.
	phase(t, "degraded after 3 failed replacements", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) {
			put.Health.Command = []string{"false"}
			put.Health.HoldShare = 1
		})
		env.waitUntil(t, "the shape degraded", 120*time.Second, func() bool {
			shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
			must(t, err)
			return shape.Status == api.ShapeStatusDegraded
		})

		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		if !strings.Contains(shape.StatusReason, "3 replacements") || shape.ScalingCurrent != 2 {
			t.Fatalf("degraded shape: %s (%q), %d instances", shape.Status, shape.StatusReason, shape.ScalingCurrent)
		}

		hook.waitFor("degraded", 20*time.Second, lifecycleEvent("deployment-shape-degraded", ""))
		// A replacement started before the verdict may still be finishing: wait for it.
		env.waitUntil(t, "the last replacement settled", 30*time.Second, func() bool {
			byName := env.instancesByName(t)
			for _, instance := range byName {
				if instance.State != "created" {
					return false
				}
			}

			return len(byName) == 2
		})

		settled := names(env.instancesByName(t))
		time.Sleep(4 * time.Second)
		if now := names(env.instancesByName(t)); now != settled {
			t.Fatalf("autohealing went on after the shape was degraded: %s then %s", settled, now)
		}

		// Unhealthy instances come first as scale-down candidates for the governor.
		for _, instance := range env.instancesByName(t) {
			if instance.Health != api.HealthUnhealthy {
				t.Fatalf("with a failing check every instance is unhealthy: %+v", instance)
			}
		}
	})

	// The operator sees it all in /1.0/metrics: replacements by result, the shape degraded,
	// its instances unhealthy and none ready (labels sorted, as the exposition prints them).
	phase(t, "metrics", func(t *testing.T) {
		text := scrape(t, env.admin)
		labels := `deployment="dep1",project="default"`
		if sample(text, `lxd_deployd_autoheal_replacements_total{`+labels+`,result="ok",shape="web"}`) < 2 ||
			sample(text, `lxd_deployd_autoheal_replacements_total{`+labels+`,result="gave_up",shape="web"}`) < 1 ||
			sample(text, `lxd_deployd_shape_degraded{`+labels+`,shape="web"}`) != 1 ||
			sample(text, `lxd_deployd_shape_instances_health{deployment="dep1",health="unhealthy",project="default",shape="web"}`) != 2 ||
			sample(text, `lxd_deployd_shape_instances_ready{`+labels+`,shape="web"}`) != 0 {
			t.Fatalf("autohealing in the metrics:\n%s", text)
		}
	})
}

func names(byName map[string]api.DeploymentInstance) string {
	list := make([]string, 0, len(byName))
	for name := range byName {
		list = append(list, name)
	}

	sort.Strings(list)
	return strings.Join(list, ",")
}
