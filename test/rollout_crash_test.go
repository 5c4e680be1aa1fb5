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
	alias, busybox := env.busyboxAlias(t)

	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Source.Alias = alias
		put.Rollout = api.DeploymentShapeRollout{Trigger: api.RolloutTriggerImageChange}
	})
	env.scaleTo(t, 2)

	fingerprint := env.publishNewImage(t, busybox)
	env.rollOutImageChange(t, alias, fingerprint, 2*time.Minute)

	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	rev, err := env.admin.GetDeploymentShapeRevision("dep1", "web", shape.Revision)
	must(t, err)
	if rev.Cause != "image-change" || rev.Requestor.Name != "image-change" {
		t.Fatalf("revision: %+v", rev)
	}

	env.requireOnImage(t, 2, fingerprint, "")
}
