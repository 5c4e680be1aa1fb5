package test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Issue 33: a rollback goes back to the exact image of the revision it restores.

// imageShape makes web name an alias of the env's own with the image-change trigger and
// waits until the trigger has seen the alias (the revision records busybox).
func (env *governorEnv) imageShape(t testing.TB, rollout api.DeploymentShapeRollout) (alias string, busybox string) {
	t.Helper()
	alias, busybox = env.busyboxAlias(t)
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Source.Alias = alias
		put.Rollout = rollout
	})

	var rev *api.DeploymentShapeRevision
	env.waitUntil(t, "the revision naming the alias to record its image", 30*time.Second, func() bool {
		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		rev, err = env.admin.GetDeploymentShapeRevision("dep1", "web", shape.Revision)
		must(t, err)
		return rev.ImageFingerprint == busybox
	}, showing(func() string { return fmt.Sprintf("revision %+v", rev) }))
	return alias, busybox
}

// TestRollbackRestoresExactImage: a bad image published under the alias is rolled out by
// the image-change trigger; a rollback to the revision before it pins busybox in the
// template, leaves the bad image's instances outdated, and the rollout makes busybox ones
// although the alias still names the bad image. (Before, the rollback restored the alias,
// marked the bad image's instances current and the rollout replaced nothing.)
func TestRollbackRestoresExactImage(t *testing.T) {
	env := newRolloutEnv(t, 0, 3)
	_, busybox := env.imageShape(t, api.DeploymentShapeRollout{Trigger: api.RolloutTriggerImageChange})
	env.scaleTo(t, 2)

	alias := env.prefix + "-img"
	bad := env.publishNewImage(t, busybox)
	env.rollOutImageChange(t, alias, bad, 2*time.Minute)
	env.requireOnImage(t, 2, bad, " after the image change")

	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	rev, err := env.admin.GetDeploymentShapeRevision("dep1", "web", shape.Revision)
	must(t, err)
	if rev.Cause != "image-change" || rev.ImageFingerprint != bad {
		t.Fatalf("image-change revision: %+v", rev)
	}

	result, err := env.admin.RollbackDeploymentShape("dep1", "web", api.DeploymentShapeRollbackPost{Notes: "the new image is bad"})
	must(t, err)
	rev, err = env.admin.GetDeploymentShapeRevision("dep1", "web", result.Revision)
	must(t, err)
	source := rev.Shape.InstanceTemplate.Source
	if source.Alias != alias || source.Fingerprint != busybox || rev.ImageFingerprint != busybox {
		t.Fatalf("rollback revision: %+v", rev)
	}

	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	for _, i := range instances {
		if !i.Outdated {
			t.Fatalf("after the rollback, %s (on the bad image) is current", i.Name)
		}
	}

	op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{Notes: "back to busybox"})
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	must(t, op.Wait(ctx))
	env.requireOnImage(t, 2, busybox, " after the rollback's rollout")

	// New instances too, while the alias still names the bad image.
	extra := env.name("extra")
	env.launch(t, env.gov, extra)
	live, _, err := env.lxdConn.GetInstance(extra)
	must(t, err)
	if live.Config["volatile.base_image"] != busybox {
		t.Fatalf("a launch after the rollback used image %s, want %s", live.Config["volatile.base_image"], busybox)
	}
}
