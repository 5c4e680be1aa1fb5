package test

import (
	"sort"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestRolloutSurvivesKill kills the daemon with SIGKILL mid-rollout: after a restart the
// rollout finishes, with exactly the shape's size in instances, all current, and nothing
// left in LXD that no record names.
func TestRolloutSurvivesKill(t *testing.T) {
	env := newRolloutEnv(t, 0, 4, "--reconcile-interval", "1s")
	env.scaleTo(t, 3)
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		setVersion("2")(put)
		put.Rollout = api.DeploymentShapeRollout{MinReady: "1s"}
	})

	_, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)
	env.waitFirstReplacement(t, 1)

	env.d.Kill(t)
	env.d.Start(t, "--reconcile-interval", "1s")
	waitLXDOnline(t, env.d)
	env.waitRollout(t, 1, 2*time.Minute, "complete")

	// Settled: no record in flux, the records and LXD name the same instances.
	deadline := time.Now().Add(time.Minute)
	for {
		instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
		must(t, err)
		var rows []string
		settled := true
		for _, i := range instances {
			rows = append(rows, i.Name)
			settled = settled && i.State == "created" && !i.Outdated && i.Status == "Running"
		}

		sort.Strings(rows)
		var live []string
		all, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
		must(t, err)
		for _, i := range all {
			if i.Config["user.lxd-deployd.deployment"] == "dep1" && (strings.HasPrefix(i.Name, "web-r") || strings.HasPrefix(i.Name, env.prefix+"-")) {
				live = append(live, i.Name)
			}
		}

		sort.Strings(live)
		if settled && len(rows) == 3 && strings.Join(rows, ",") == strings.Join(live, ",") {
			break
		}

		if time.Now().After(deadline) {
			t.Fatalf("after the crash: records %v (settled %v), LXD %v\n%s", rows, settled, live, env.d.Log())
		}

		time.Sleep(250 * time.Millisecond)
	}

	for name, v := range env.versions(t) {
		if v != "2" {
			t.Fatalf("after the crash, %s runs %q", name, v)
		}
	}
}

// TestImageChangeTrigger imports a new image under the alias a shape names: a revision
// (cause image-change) and a rollout follow by themselves.
func TestImageChangeTrigger(t *testing.T) {
	env := newRolloutEnv(t, 0, 3)
	alias := env.prefix + "-img"
	busybox, _, err := env.lxdConn.GetImageAlias("busybox")
	must(t, err)
	must(t, env.lxdConn.CreateImageAlias(lxdapi.ImageAliasesPost{ImageAliasesEntry: lxdapi.ImageAliasesEntry{Name: alias, Target: busybox.Target}}))
	t.Cleanup(func() { _ = env.lxdConn.DeleteImageAlias(alias) })

	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Source.Alias = alias
		put.Rollout = api.DeploymentShapeRollout{Trigger: api.RolloutTriggerImageChange}
	})
	env.scaleTo(t, 2)

	// A new image: busybox published from a container that never ran.
	source := env.name("imgsrc")
	op, err := env.lxdConn.CreateInstance(lxdapi.InstancesPost{Name: source, Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}})
	must(t, err)
	must(t, op.Wait())
	publish, err := env.lxdConn.CreateImage(lxdapi.ImagesPost{Source: &lxdapi.ImagesPostSource{Type: "instance", Name: source}}, nil)
	must(t, err)
	must(t, publish.Wait())
	fingerprint, _ := publish.Get().Metadata["fingerprint"].(string)
	if fingerprint == "" || fingerprint == busybox.Target {
		t.Fatalf("publish gave fingerprint %q", fingerprint)
	}

	t.Cleanup(func() {
		if op, err := env.lxdConn.DeleteImage(fingerprint); err == nil {
			_ = op.Wait()
		}
	})

	must(t, env.lxdConn.UpdateImageAlias(alias, lxdapi.ImageAliasesEntryPut{Target: fingerprint}, ""))
	r := env.waitRollout(t, 1, 2*time.Minute, "complete")
	if r.Cause != "image-change" {
		t.Fatalf("rollout: %+v", r)
	}

	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	rev, err := env.admin.GetDeploymentShapeRevision("dep1", "web", shape.Revision)
	must(t, err)
	if rev.Cause != "image-change" || rev.Requestor.Name != "image-change" {
		t.Fatalf("revision: %+v", rev)
	}

	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	if len(instances) != 2 {
		t.Fatalf("instances after the rollout: %+v", instances)
	}

	for _, i := range instances {
		live, _, err := env.lxdConn.GetInstance(i.Name)
		must(t, err)
		if i.Outdated || live.Config["volatile.base_image"] != fingerprint {
			t.Fatalf("instance %s: outdated %v, image %s (want %s)", i.Name, i.Outdated, live.Config["volatile.base_image"], fingerprint)
		}
	}
}
