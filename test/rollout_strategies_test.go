package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestRolloutRecreateAndCanary(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 3, 4)
	env.scaleTo(t, 3)

	// Recreate deletes before it replaces: at scaling_minimum it is refused up front.
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		setVersion("2")(put)
		put.Rollout = api.DeploymentShapeRollout{Strategy: api.RolloutRecreate}
	})
	_, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	expectCode(t, err, 409, "recreate at scaling_minimum")
	if err == nil || !strings.Contains(err.Error(), "scaling_minimum") {
		t.Fatalf("the refusal must name the knob: %v", err)
	}

	rollouts, err := env.admin.GetDeploymentShapeRollouts("dep1", "web")
	must(t, err)
	if len(rollouts) != 0 {
		t.Fatalf("a refused rollout left a record: %+v", rollouts)
	}

	// Canary: one instance is replaced, then the rollout waits for promote.
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		put.Rollout = api.DeploymentShapeRollout{Strategy: api.RolloutCanary, Canary: &api.DeploymentShapeRolloutCanary{Count: 1}}
	})
	op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)
	r := env.waitRollout(t, 1, 2*time.Minute, "paused")
	if r.Phase != "wait-promote" || r.Updated != 1 || r.Outdated != 2 {
		t.Fatalf("canary: %+v", r)
	}

	expectCode(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", 1, "resume"), 409, "resume a canary waiting for promote")
	must(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", 1, "promote"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	must(t, op.Wait(ctx))
	for name, v := range env.versions(t) {
		if v != "2" {
			t.Fatalf("after promote, %s runs %q", name, v)
		}
	}

	// Abort reverts the canaries to the revision the rollout started from.
	env.updateShape(t, "", setVersion("3"))
	_, err = env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)
	env.waitRollout(t, 2, 2*time.Minute, "paused")
	must(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", 2, "abort"))
	r = env.waitRollout(t, 2, time.Second, "reverted")
	env.waitRollout(t, 3, 2*time.Minute, "complete")
	for name, v := range env.versions(t) {
		if v != "2" {
			t.Fatalf("after abort, %s runs %q (want the version before the canary)", name, v)
		}
	}

	expectCode(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", 2, "promote"), 409, "promote a reverted rollout")
	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	rev, err := env.admin.GetDeploymentShapeRevision("dep1", "web", shape.Revision)
	must(t, err)
	if !strings.HasPrefix(rev.Cause, "rollback to ") || !strings.Contains(r.Reason, "aborted") {
		t.Fatalf("abort: revision %+v, rollout %+v", rev, r)
	}
}

func TestRolloutFailureAutoReverts(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 0, 3)
	env.scaleTo(t, 2)

	// A template whose image does not exist never starts: with a config-change trigger the
	// change itself starts the rollout, which fails by its deadline and reverts.
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		put.Rollout = api.DeploymentShapeRollout{Trigger: api.RolloutTriggerConfigChange, AutoRevert: true, ProgressDeadline: "3s"}
	})
	env.updateShape(t, "broken on purpose", func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Source.Alias = "no-such-image"
	})

	r := env.waitRollout(t, 1, time.Minute, "reverted")
	if !strings.Contains(r.Reason, "no progress") || r.Cause != "config-change" {
		t.Fatalf("failed rollout: %+v", r)
	}

	env.waitRollout(t, 2, time.Minute, "complete")
	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if len(instances) != 2 || shape.InstanceTemplate.Source.Alias != "busybox" {
		t.Fatalf("after the revert: shape %+v, instances %+v", shape, instances)
	}

	for _, i := range instances {
		if i.Outdated || i.Status != "Running" || i.Revision != shape.Revision {
			t.Fatalf("after the revert every instance is at the reverted revision: %+v", instances)
		}
	}

	// /1.0/metrics counted both ends (the one the failing rollout's alert rule reads), and
	// no rollout is active any more.
	finished := `lxd_deployd_rollouts_finished_total{deployment="dep1",project="default",shape="web",status=`
	text := waitForSample(t, env.admin, finished+`"complete"}`, 1) // counted just after the status is stored
	if sample(text, finished+`"reverted"}`) != 1 || sample(text, finished+`"complete"}`) != 1 ||
		sample(text, `lxd_deployd_shape_rollouts{deployment="dep1",project="default",shape="web",status="running"}`) != -1 {
		t.Fatalf("rollouts in the metrics after a revert:\n%s", text)
	}

	// The CLI: status --watch fails for a failed rollout (for CI pipelines); the history,
	// the diff and the activity say what happened.
	u := newCLIUser(t, env.d)
	watched := u.run("", "deployment", "shape", "rollout", "status", "dep1", "web", "1", "--watch")
	if watched.code == 0 || !strings.Contains(watched.stderr, "reverted") || !strings.Contains(watched.stdout, "(reverted)") {
		t.Fatalf("rollout status --watch of a reverted rollout: exit %d\n%s\n%s", watched.code, watched.stdout, watched.stderr)
	}

	u.ok("deployment", "shape", "rollout", "status", "dep1", "web", "--watch")
	for _, check := range []struct {
		args []string
		want string
	}{
		{[]string{"deployment", "shape", "revision", "list", "dep1", "web"}, "rollback to 2"},
		{[]string{"deployment", "shape", "revision", "diff", "dep1", "web", "3"}, "instance_template.source.alias: \"no-such-image\" -> \"busybox\""},
		{[]string{"deployment", "shape", "rollout", "list", "dep1", "web"}, "reverted"},
		{[]string{"deployment", "activity", "dep1", "--shape", "web"}, "rollout-reverted"},
	} {
		if out := u.ok(check.args...); !strings.Contains(out, check.want) {
			t.Fatalf("lxd-deploy %s: want %q in\n%s", strings.Join(check.args, " "), check.want, out)
		}
	}
}

func TestRolloutPauseResumeCancelWithGovernor(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 1, 5)
	env.scaleTo(t, 3)
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		setVersion("2")(put)
		put.Rollout = api.DeploymentShapeRollout{MinReady: "2s"}
	})

	_, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)
	stopSampling := env.startSamplingBounds(t)

	// Pause once the first replacement exists; nothing more is replaced while paused.
	env.waitFirstReplacement(t, 1)

	must(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", 1, "pause"))
	expectCode(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", 1, "pause"), 409, "pause a paused rollout")
	time.Sleep(time.Second) // a launch reserved before the pause finishes
	before, err := env.admin.GetDeploymentShapeRollout("dep1", "web", 1)
	must(t, err)
	time.Sleep(4 * time.Second)
	after, err := env.admin.GetDeploymentShapeRollout("dep1", "web", 1)
	must(t, err)
	if after.Status != "paused" || after.Updated != before.Updated || after.Outdated != before.Outdated {
		t.Fatalf("a paused rollout moved: %+v then %+v", before, after)
	}

	// The governor keeps working: a launch is at the new revision, and the size it sets
	// is the one the rollout keeps.
	env.launch(t, env.gov, env.name("gov"))
	g, err := env.admin.GetDeploymentShapeInstance("dep1", "web", env.name("gov"))
	must(t, err)
	if g.Outdated {
		t.Fatalf("a governor launch during a rollout must use the latest revision: %+v", g)
	}

	r, err := env.admin.GetDeploymentShapeRollout("dep1", "web", 1)
	must(t, err)
	if r.Size != 4 {
		t.Fatalf("the rollout keeps size %d, want 4 after the governor's launch", r.Size)
	}

	must(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", 1, "resume"))
	time.Sleep(3 * time.Second)

	// The governor scales down an outdated instance mid-rollout.
	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	for _, i := range instances {
		if i.Outdated && i.State == "created" {
			env.remove(t, env.gov, i.Name)
			break
		}
	}

	must(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", 1, "cancel"))
	bounds := stopSampling()
	if bounds.fewest < 1 || bounds.most > 5 {
		t.Fatalf("bounds broken during the rollout: fewest ready %d, most %d", bounds.fewest, bounds.most)
	}

	cancelled := env.waitRollout(t, 1, time.Second, "cancelled")
	time.Sleep(3 * time.Second)
	later, err := env.admin.GetDeploymentShapeRollout("dep1", "web", 1)
	must(t, err)
	if later.Updated+later.Outdated > 5 || later.Updated > cancelled.Updated+1 {
		t.Fatalf("a cancelled rollout kept replacing: %+v then %+v", cancelled, later)
	}

	expectCode(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", 1, "resume"), 409, "resume a cancelled rollout")
}
