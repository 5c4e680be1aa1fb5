package test

import (
	"sort"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestWarmPool: a shape keeps its pool of stopped instances, a launch takes one (a start,
// not an image unpack) and the pool refills; the pool survives a restart, an instance
// template change replaces it, and deleting the shape removes it.
func TestWarmPool(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3)
	seen := map[string]bool{}
	t.Cleanup(func() {
		for name := range seen {
			env.deleteByHand(name)
		}
	})

	pool := func(t testing.TB) []api.DeploymentShapeWarmPoolInstance {
		pool, err := env.readOnly.GetDeploymentShapeWarmPool("dep1", "web")
		must(t, err)
		for _, p := range pool {
			seen[p.Name] = true
		}

		return pool
	}

	readyPool := func(t testing.TB, what string, hash string) []string {
		var ready []string
		env.waitUntil(t, what, 60*time.Second, func() bool {
			ready = nil
			for _, p := range pool(t) {
				if p.State == "ready" && (hash == "" || p.TemplateHash == hash) {
					ready = append(ready, p.Name)
				}
			}

			return len(ready) == 2 && len(pool(t)) == 2
		})

		sort.Strings(ready)
		return ready
	}

	a, b := env.name("a"), env.name("b")
	var ready, refilled []string
	phase(t, "a pool of 2", func(t *testing.T) {
		expectCode(t, func() error {
			shape, etag, err := env.admin.GetDeploymentShape("dep1", "web")
			must(t, err)
			put := shape.Writable()
			put.WarmPool = &api.DeploymentShapeWarmPool{Size: -1}
			return env.admin.UpdateDeploymentShape("dep1", "web", put, etag)
		}(), 400, "negative pool size")

		env.setShape(t, func(put *api.DeploymentShapePut) { put.WarmPool = &api.DeploymentShapeWarmPool{Size: 2} })
		ready = readyPool(t, "a pool of 2", "")
		u := newCLIUser(t, env.d)
		if out := u.ok("deployment", "shape", "warm-pool", "show", "dep1", "web"); !contains(out, "| "+ready[0]+" | ready", "| "+ready[1]+" | ready") {
			t.Errorf("warm-pool show:\n%s", out)
		}

		all, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
		must(t, err)
		for _, instance := range all {
			if !seen[instance.Name] {
				continue
			}

			if instance.Status != "Stopped" || instance.Config["user.lxd-deployd.warm-pool"] != "true" || instance.Config["security.protection.delete"] != "true" {
				t.Fatalf("pool instance %s: %s %v", instance.Name, instance.Status, instance.Config)
			}
		}

		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		if shape.ScalingCurrent != 0 || shape.WarmPoolReady != 2 {
			t.Fatalf("pool instances never count: current %d, ready %d", shape.ScalingCurrent, shape.WarmPoolReady)
		}

		// /1.0/metrics says the same: the pool is full, no instance counts.
		text := scrape(t, env.admin)
		labels := `{deployment="dep1",project="default",shape="web"}`
		if sample(text, "lxd_deployd_shape_warm_pool_ready"+labels) != 2 || sample(text, "lxd_deployd_shape_warm_pool_size"+labels) != 2 || sample(text, "lxd_deployd_shape_instances"+labels) != 0 {
			t.Fatalf("the warm pool in the metrics:\n%s", text)
		}
	})

	// A launch takes a pool instance: LXD made it before the launch was asked for.
	phase(t, "a launch takes a pool instance", func(t *testing.T) {
		asked := time.Now()
		env.launch(t, env.gov, a)
		instance, _, err := env.lxdConn.GetInstance(a)
		must(t, err)
		if instance.Status != "Running" || !instance.CreatedAt.Before(asked) || instance.Config["user.lxd-deployd.warm-pool"] != "" || instance.Config["user.lxd-deployd.shape"] != "web" {
			t.Fatalf("a launch from the pool is a pool instance renamed and started: %s created %s (asked %s) %v", instance.Status, instance.CreatedAt, asked, instance.Config)
		}

		refilled = readyPool(t, "the pool refilled", "")
		if strings.Join(refilled, ",") == strings.Join(ready, ",") {
			t.Fatalf("the launch must have taken one of %v", ready)
		}
	})

	// The pool survives a restart as it is.
	phase(t, "the pool survives a restart", func(t *testing.T) {
		env.d.Restart(t)
		waitLXDOnline(t, env.d)
		time.Sleep(time.Second)
		if after := readyPool(t, "the pool after a restart", ""); strings.Join(after, ",") != strings.Join(refilled, ",") {
			t.Fatalf("a restart kept the pool %v, got %v", refilled, after)
		}
	})

	// A new instance template makes the pool outdated: it is replaced, never used.
	phase(t, "an outdated pool replaced", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) {
			put.InstanceTemplate.Config = map[string]string{"user.revision": "2"}
		})

		env.launch(t, env.gov, b)
		hash := env.instancesByName(t)[b].TemplateHash
		if hash == env.instancesByName(t)[a].TemplateHash {
			t.Fatal("the template change must change the hash")
		}

		readyPool(t, "the pool remade from the new template", hash)
		instance, _, err := env.lxdConn.GetInstance(b)
		must(t, err)
		if instance.Config["user.revision"] != "2" {
			t.Fatalf("the launch after a template change must not use an outdated pool instance: %v", instance.Config)
		}
	})

	// With reuse_on_scale_in, a scale-in stops the instance and returns it to a short pool.
	phase(t, "reuse on scale-in", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) {
			put.WarmPool = &api.DeploymentShapeWarmPool{Size: 3, ReuseOnScaleIn: true}
		})

		instance, _, err := env.lxdConn.GetInstance(b)
		must(t, err)
		uuid := instance.Config["volatile.uuid"]
		env.remove(t, env.gov, b)
		env.waitUntil(t, "the scaled-in instance back in the pool", 10*time.Second, func() bool {
			for _, p := range pool(t) {
				pooled, _, err := env.lxdConn.GetInstance(p.Name)
				if err == nil && pooled.Config["volatile.uuid"] == uuid && p.State == "ready" {
					return pooled.Status == "Stopped" && pooled.Config["user.lxd-deployd.warm-pool"] == "true"
				}
			}

			return false
		})

		if _, ok := env.instancesByName(t)[b]; ok {
			t.Fatal("an instance returned to the pool is no longer an instance of the shape")
		}
	})

	// Deleting the shape removes its pool from LXD.
	phase(t, "deleting the shape removes its pool", func(t *testing.T) {
		env.remove(t, env.gov, a)
		must(t, env.admin.DeleteDeploymentShape("dep1", "web", false))
		env.waitUntil(t, "the pool of a deleted shape removed", 30*time.Second, func() bool {
			all, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
			must(t, err)
			for _, instance := range all {
				if seen[instance.Name] {
					return false
				}
			}

			return true
		})
	})
}
