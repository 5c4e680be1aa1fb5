package test

import (
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestRolloutSurvivesKill kills the daemon with SIGKILL mid-rollout: after a restart the
// rollout finishes, with exactly the shape's size in instances, all current, and nothing
// left in LXD that no record names.
func TestRolloutSurvivesKill(t *testing.T) {
	t.Parallel()
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
	env.waitSettled(t, 3, time.Minute, "crash")

	for name, v := range env.versions(t) {
		if v != "2" {
			t.Fatalf("after the crash, %s runs %q", name, v)
		}
	}
}

// TestImageChangeTrigger imports a new image under the alias a shape names: a revision
// (cause image-change) and a rollout follow by themselves.
func TestImageChangeTrigger(t *testing.T) {
	t.Parallel()
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
