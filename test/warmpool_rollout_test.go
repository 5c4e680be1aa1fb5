package test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestWarmPoolRollingRollout: a rolling rollout on a shape with a warm pool of 2. The new
// revision remakes the pool from the new template before the rollout looks for one, the
// rollout's replacements take pool instances (LXD made them before their launch was
// reserved), the pool never holds an instance of the old template and is back at 2 of the
// new one after (reuse_on_scale_in does not pool the outdated instances the rollout
// deletes), the bounds hold throughout, and deleting the shape leaves nothing in LXD.
func TestWarmPoolRollingRollout(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 0, 4)
	seen := &sync.Map{} // every pool instance name ever listed, for the cleanup
	t.Cleanup(func() {
		seen.Range(func(name, _ any) bool {
			env.deleteByHand(name.(string))
			return true
		})
	})

	// pool lists web's pool, and reads each instance's user.version in LXD ("gone" when the
	// instance went meanwhile, say taken by a launch and renamed).
	type pooled struct {
		api.DeploymentShapeWarmPoolInstance
		version string
	}

	pool := func(t testing.TB) []pooled {
		list, err := env.readOnly.GetDeploymentShapeWarmPool("dep1", "web")
		must(t, err)
		out := make([]pooled, 0, len(list))
		for _, p := range list {
			seen.Store(p.Name, true)
			version := "gone"
			live, _, err := env.lxdConn.GetInstance(p.Name)
			if err == nil {
				version = live.Config["user.version"]
			}

			out = append(out, pooled{DeploymentShapeWarmPoolInstance: p, version: version})
		}

		return out
	}

	// fullPool waits for a pool of exactly 2 ready instances of the given user.version.
	fullPool := func(t testing.TB, what string, version string) []pooled {
		var got []pooled
		env.waitUntil(t, what, 30*time.Second, func() bool {
			got = pool(t)
			for _, p := range got {
				if p.State != "ready" || p.version != version {
					return false
				}
			}

			return len(got) == 2
		})

		return got
	}

	var old, fresh []pooled
	var started time.Time
	var bounds boundsSeen
	phase(t, "a pool at version 1", func(t *testing.T) {
		env.setShape(t, func(put *api.DeploymentShapePut) {
			setVersion("1")(put)
			// reuse_on_scale_in: the rollout's deletes of outdated instances still delete.
			put.WarmPool = &api.DeploymentShapeWarmPool{Size: 2, ReuseOnScaleIn: true}
			put.Rollout = api.DeploymentShapeRollout{MaxSurge: "1", MaxUnavailable: "0", MinReady: "1s"}
		})

		fullPool(t, "a pool of 2 at version 1", "1")
		env.scaleTo(t, 3)
		old = fullPool(t, "the pool refilled after the launches", "1")
	})

	// A new revision: the pool is remade from it (poked by the update, not at its next
	// round), its outdated instances removed, not used.
	phase(t, "a new revision remakes the pool", func(t *testing.T) {
		env.updateShape(t, "ship v2", setVersion("2"))
		fresh = fullPool(t, "the pool remade at version 2", "2")
		if fresh[0].TemplateHash == old[0].TemplateHash {
			t.Fatalf("the new template must change the pool's hash: %s", fresh[0].TemplateHash)
		}

		for _, p := range old {
			if _, _, err := env.lxdConn.GetInstance(p.Name); err == nil {
				t.Fatalf("outdated pool instance %s is still in LXD", p.Name)
			}
		}
	})

	// During the rollout: bounds, and a pool that never exceeds 2 and never holds
	// anything but version 2 (a pool instance being taken is a launch's, not the pool's).
	phase(t, "the rollout", func(t *testing.T) {
		stopSampling := env.startSamplingBounds(t)

		poolErr := "" // the first thing wrong the pool sampler saw
		stopPool := sampleEvery(t, 100*time.Millisecond, func() {
			if poolErr != "" {
				return
			}

			list, err := env.readOnly.GetDeploymentShapeWarmPool("dep1", "web")
			if err != nil {
				return
			}

			kept := 0
			for _, p := range list {
				seen.Store(p.Name, true)
				if p.State != "taking" {
					kept++
				}

				if p.TemplateHash != fresh[0].TemplateHash {
					poolErr = "an outdated pool instance during the rollout: " + p.Name + " " + p.TemplateHash
					return
				}
			}

			if kept > 2 {
				poolErr = "more than 2 pool instances during the rollout"
			}
		})

		started = time.Now()
		op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
		must(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		err = op.Wait(ctx)
		stopPool()
		bounds = stopSampling()
		if poolErr != "" {
			t.Fatal(poolErr)
		}

		must(t, err)
		env.waitRollout(t, 1, 5*time.Second, "complete")
		if bounds.fewest < 3 || bounds.most > 4 {
			t.Fatalf("during the rollout: fewest ready %d (want >= 3), most instances %d (want <= 4) over %d samples", bounds.fewest, bounds.most, bounds.samples)
		}
	})

	// Every replacement runs version 2; those whose LXD instance predates their own
	// reservation came from the pool. The first surely did: the pool was full when the
	// rollout started.
	phase(t, "replacements from the pool", func(t *testing.T) {
		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		prefix := fmt.Sprintf("web-r%d-", shape.Revision)
		instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
		must(t, err)
		fromPool, earliest := 0, false
		for _, i := range instances {
			live, _, err := env.lxdConn.GetInstance(i.Name)
			must(t, err)
			if !strings.HasPrefix(i.Name, prefix) || i.Outdated || live.Config["user.version"] != "2" || live.Config["user.lxd-deployd.warm-pool"] != "" || live.Status != "Running" {
				t.Fatalf("after the rollout: %s outdated=%v %s %v", i.Name, i.Outdated, live.Status, live.Config)
			}

			if live.CreatedAt.Before(i.CreatedAt) {
				fromPool++
				earliest = earliest || live.CreatedAt.Before(started)
			}
		}

		if len(instances) != 3 || fromPool == 0 || !earliest {
			t.Fatalf("%d instances after the rollout, %d from the pool (one made before the rollout: %v)", len(instances), fromPool, earliest)
		}

		t.Logf("rolling rollout of 3 with a warm pool of 2: %d replacements from the pool; fewest ready %d, most instances %d", fromPool, bounds.fewest, bounds.most)
		after := fullPool(t, "the pool back at 2 of version 2 after the rollout", "2")
		for _, p := range after {
			if p.TemplateHash != fresh[0].TemplateHash {
				t.Fatalf("pool after the rollout: %+v", after)
			}
		}
	})

	// Deleting the shape leaves nothing of it in LXD: instances and pool.
	phase(t, "deleting the shape", func(t *testing.T) {
		must(t, env.admin.DeleteDeploymentShape("dep1", "web", true))
		env.waitUntil(t, "nothing of shape web left in LXD", 30*time.Second, func() bool {
			all, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
			must(t, err)
			for _, instance := range all {
				if instance.Config["user.lxd-deployd.deployment"] == "dep1" && instance.Config["user.lxd-deployd.shape"] == "web" {
					return false
				}
			}

			return true
		})
	})
}

// TestWarmPoolImageChange: the alias a shape's template names moves to a new image. The
// revision keeps the template as it was, yet the pool made from the old image is remade
// from the new one, and the rollout's replacements run the new image: none is an old pool
// instance handed out.
func TestWarmPoolImageChange(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 0, 3)
	alias, busybox := env.busyboxAlias(t)
	seen := &sync.Map{}
	t.Cleanup(func() {
		seen.Range(func(name, _ any) bool {
			env.deleteByHand(name.(string))
			return true
		})
	})

	// poolOf waits for a pool of 2 ready instances made from image.
	poolOf := func(what string, image string) {
		env.waitUntil(t, what, 30*time.Second, func() bool {
			list, err := env.readOnly.GetDeploymentShapeWarmPool("dep1", "web")
			must(t, err)
			for _, p := range list {
				seen.Store(p.Name, true)
				live, _, err := env.lxdConn.GetInstance(p.Name)
				if p.State != "ready" || err != nil || live.Config["volatile.base_image"] != image {
					return false
				}
			}

			return len(list) == 2
		})
	}

	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Source.Alias = alias
		put.Rollout = api.DeploymentShapeRollout{Trigger: api.RolloutTriggerImageChange, MaxSurge: "1", MaxUnavailable: "0"}
		put.WarmPool = &api.DeploymentShapeWarmPool{Size: 2, ReuseOnScaleIn: true}
	})
	env.scaleTo(t, 2)
	poolOf("a pool of 2 of the first image", busybox)
	fingerprint := env.publishNewImage(t, busybox)
	env.rollOutImageChange(t, alias, fingerprint, time.Minute)
	env.requireOnImage(t, 2, fingerprint, ": an old pool instance was handed out")
	poolOf("the pool remade from the new image", fingerprint)
}
