package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

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
	t.Parallel()
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

	// The dry run answers the plan and changes nothing; a dry-run that is not a boolean is
	// a 400, never a real rollback.
	yes := true
	plan, err := env.admin.DryRunRollbackDeploymentShape("dep1", "web", api.DeploymentShapeRollbackPost{Rollout: &yes})
	must(t, err)
	if !plan.DryRun || plan.Revision != shape.Revision+1 || plan.Rollout != 2 || len(plan.Outdated) != 2 || plan.TriggersSuspended == nil ||
		len(plan.Changes) != 1 || plan.Changes[0].Field != "instance_template.source.fingerprint" || plan.Changes[0].New != busybox {
		t.Fatalf("dry-run plan: %+v", plan)
	}

	_, _, err = env.admin.Query("POST", "/1.0/deployments/dep1/shapes/web/rollback?dry-run=maybe", api.DeploymentShapeRollbackPost{}, "")
	expectCode(t, err, 400, "a dry-run that is not a boolean")
	unchanged, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if unchanged.Revision != shape.Revision || unchanged.TriggersSuspended != nil || unchanged.InstanceTemplate.Source.Fingerprint != "" {
		t.Fatalf("a dry run changed the shape: %+v", unchanged)
	}

	rollouts, err := env.admin.GetDeploymentShapeRollouts("dep1", "web")
	must(t, err)
	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	if len(rollouts) != 1 || len(instances) != 2 || instances[0].Outdated || instances[1].Outdated {
		t.Fatalf("a dry run started a rollout or outdated instances: %+v, %+v", rollouts, instances)
	}

	result, err := env.admin.RollbackDeploymentShape("dep1", "web", api.DeploymentShapeRollbackPost{Notes: "the new image is bad"})
	must(t, err)
	rev, err = env.admin.GetDeploymentShapeRevision("dep1", "web", result.Revision)
	must(t, err)
	source := rev.Shape.InstanceTemplate.Source
	if source.Alias != alias || source.Fingerprint != busybox || rev.ImageFingerprint != busybox {
		t.Fatalf("rollback revision: %+v", rev)
	}

	instances, err = env.admin.GetDeploymentShapeInstances("dep1", "web")
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

// TestRollbackSuspendsTriggers: after a rollback past an image change, the shape shows its
// image triggers suspended (since, by whom, the pinned image) and a new image under the
// alias changes nothing; resuming the deployment's triggers is one call, after which the
// alias is followed again. The deployment's kill switch suspends and resumes every trigger.
func TestRollbackSuspendsTriggers(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 0, 3)
	alias, busybox := env.imageShape(t, api.DeploymentShapeRollout{Trigger: api.RolloutTriggerImageChange})
	env.scaleTo(t, 1)
	bad := env.publishNewImage(t, busybox)
	env.rollOutImageChange(t, alias, bad, 2*time.Minute)

	// Resuming what is not suspended is a 409 that changes nothing.
	expectCode(t, env.admin.ResumeDeploymentTriggers("dep1", api.DeploymentTriggersPost{}), 409, "resume with nothing suspended")
	expectCode(t, env.admin.ResumeDeploymentShapeTriggers("dep1", "web", api.DeploymentTriggersPost{}), 409, "resume a shape not suspended")

	// The CLI's dry run shows the plan.
	u := newCLIUser(t, env.d)
	if out := u.ok("deployment", "shape", "rollback", "dep1", "web", "--dry-run", "--rollout"); !strings.Contains(out, "instance_template.source.fingerprint") || !strings.Contains(out, "outdated: ") || !strings.Contains(out, "dry run, nothing changed") {
		t.Fatalf("rollback --dry-run:\n%s", out)
	}

	// The rollback, rolled out in the same call.
	yes := true
	result, err := env.admin.RollbackDeploymentShape("dep1", "web", api.DeploymentShapeRollbackPost{Rollout: &yes})
	must(t, err)
	if result.Rollout != 2 || result.TriggersSuspended == nil {
		t.Fatalf("rollback: %+v", result)
	}

	r := env.waitRollout(t, 2, 2*time.Minute, "complete")
	if r.Cause != "rollback to 2" {
		t.Fatalf("the rollback's rollout: %+v", r)
	}

	env.requireOnImage(t, 1, busybox, " after the rollback")
	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	suspended := shape.TriggersSuspended
	if suspended == nil || suspended.Reason != "rollback to 2" || suspended.Image != busybox || suspended.Requestor.Protocol != "unix" || suspended.Since.IsZero() {
		t.Fatalf("shape after the rollback: triggers_suspended %+v", suspended)
	}

	// A new image under the alias: suspended, nothing happens (the trigger hears the
	// alias move at once; the pause leaves it time to act, wrongly).
	newer := env.publishNewImageFrom(t, busybox, "imgsrc2")
	must(t, env.lxdConn.UpdateImageAlias(alias, lxdapi.ImageAliasesEntryPut{Target: newer}, ""))
	time.Sleep(3 * time.Second)
	after, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if after.Revision != shape.Revision {
		t.Fatalf("a suspended image trigger made revision %d", after.Revision)
	}

	// One call resumes: the pin is lifted (its instances stay current), then the alias
	// names a new image: a revision and an automatic rollout follow.
	u.ok("deployment", "shape", "triggers", "resume", "dep1", "web", "--notes", "fixed")
	r = env.waitRollout(t, 3, 2*time.Minute, "complete")
	if r.Cause != "image-change" {
		t.Fatalf("rollout after resume: %+v", r)
	}

	env.requireOnImage(t, 1, newer, " after resuming")
	shape, _, err = env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if shape.TriggersSuspended != nil || shape.InstanceTemplate.Source.Fingerprint != "" {
		t.Fatalf("shape after resume: %+v", shape)
	}

	// The kill switch: the deployment shows it; a moved alias and a config change do
	// nothing until it is off.
	u.ok("deployment", "triggers", "suspend", "dep1", "--notes", "freeze")
	expectCode(t, env.admin.SuspendDeploymentTriggers("dep1", api.DeploymentTriggersPost{}), 409, "suspend twice")
	deployment, _, err := env.admin.GetDeployment("dep1")
	must(t, err)
	if deployment.TriggersSuspended == nil || deployment.TriggersSuspended.Reason != "freeze" {
		t.Fatalf("deployment: triggers_suspended %+v", deployment.TriggersSuspended)
	}

	must(t, env.lxdConn.UpdateImageAlias(alias, lxdapi.ImageAliasesEntryPut{Target: bad}, ""))
	time.Sleep(3 * time.Second)
	after, _, err = env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if after.Revision != shape.Revision {
		t.Fatalf("the kill switch let the image trigger make revision %d", after.Revision)
	}

	u.ok("deployment", "triggers", "resume", "dep1")
	env.waitRollout(t, 4, 2*time.Minute, "complete")
	env.requireOnImage(t, 1, bad, " after the kill switch is off")
	deployment, _, err = env.admin.GetDeployment("dep1")
	must(t, err)
	if deployment.TriggersSuspended != nil {
		t.Fatalf("deployment after resume: %+v", deployment.TriggersSuspended)
	}
}

// TestSeveralTriggersAndManualImageTrigger: a shape with config-change and a non-automatic
// image-change trigger at once. A new image makes a revision (cause image-change) that
// leaves the instances outdated and starts no rollout; a config change starts one, which
// makes instances of the new image. The deployment's kill switch stops the config-change
// trigger too. Bad triggers are refused, changing nothing.
func TestSeveralTriggersAndManualImageTrigger(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 0, 3)
	no := false
	alias, busybox := env.imageShape(t, api.DeploymentShapeRollout{Triggers: []api.DeploymentShapeTrigger{
		{Type: api.RolloutTriggerConfigChange},
		{Type: api.RolloutTriggerImageChange, Automatic: &no},
	}})
	env.scaleTo(t, 1)

	for _, bad := range []api.DeploymentShapeRollout{
		{Triggers: []api.DeploymentShapeTrigger{{Type: "manual"}}},
		{Triggers: []api.DeploymentShapeTrigger{{Type: api.RolloutTriggerConfigChange, Automatic: &no}}},
		{Triggers: []api.DeploymentShapeTrigger{{Type: api.RolloutTriggerConfigChange}, {Type: api.RolloutTriggerConfigChange}}},
		{Trigger: api.RolloutTriggerConfigChange, Triggers: []api.DeploymentShapeTrigger{{Type: api.RolloutTriggerImageChange}}},
	} {
		shape, etag, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		put := shape.Writable()
		put.Rollout = bad
		_, _, err = env.admin.Query("PUT", "/1.0/deployments/dep1/shapes/web", put, etag)
		expectCode(t, err, 400, fmt.Sprintf("triggers %+v", bad))
	}

	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if len(shape.Rollout.Triggers) != 2 {
		t.Fatalf("a refused update changed the triggers: %+v", shape.Rollout)
	}

	// A new image: a revision, no rollout. (Setting the triggers was a config change: the
	// rollout it started, of no instance, is rollout 1.)
	before, err := env.admin.GetDeploymentShapeRollouts("dep1", "web")
	must(t, err)
	newer := env.publishNewImage(t, busybox)
	must(t, env.lxdConn.UpdateImageAlias(alias, lxdapi.ImageAliasesEntryPut{Target: newer}, ""))
	var rev *api.DeploymentShapeRevision
	env.waitUntil(t, "the image-change revision", 30*time.Second, func() bool {
		rev, err = env.admin.GetDeploymentShapeRevision("dep1", "web", shape.Revision+1)
		return err == nil
	})
	if rev.Cause != "image-change" || rev.ImageFingerprint != newer {
		t.Fatalf("revision: %+v", rev)
	}

	rollouts, err := env.admin.GetDeploymentShapeRollouts("dep1", "web")
	must(t, err)
	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	if len(rollouts) != len(before) || len(instances) != 1 || !instances[0].Outdated {
		t.Fatalf("a non-automatic image trigger: rollouts %+v, instances %+v", rollouts, instances)
	}

	// A config change: the config-change trigger rolls out, with the new image.
	env.updateShape(t, "", setVersion("2"))
	r := env.waitRollout(t, len(before)+1, 2*time.Minute, "complete")
	if r.Cause != "config-change" {
		t.Fatalf("rollout: %+v", r)
	}

	env.requireOnImage(t, 1, newer, " after the config change")

	// The kill switch: a config change starts no rollout until the switch is off.
	must(t, env.admin.SuspendDeploymentTriggers("dep1", api.DeploymentTriggersPost{}))
	env.updateShape(t, "", setVersion("3"))
	rollouts, err = env.admin.GetDeploymentShapeRollouts("dep1", "web")
	must(t, err)
	if len(rollouts) != len(before)+1 {
		t.Fatalf("a config change under the kill switch started a rollout: %+v", rollouts)
	}

	must(t, env.admin.ResumeDeploymentTriggers("dep1", api.DeploymentTriggersPost{}))
	env.updateShape(t, "", setVersion("4"))
	env.waitRollout(t, len(before)+2, 2*time.Minute, "complete")
}
