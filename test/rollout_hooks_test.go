package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Pre and post hooks (doc/rollouts.md#hooks): transient instances, run as a custom
// rollout's deployer is (here from busybox, with shell commands), whose exit code gates a
// rolling, recreate or canary rollout's first and last step.

// hook is a busybox hook running a shell script.
func hook(script string) *api.DeploymentShapeRolloutHook {
	return &api.DeploymentShapeRolloutHook{Image: "busybox", Command: []string{"sh", "-c", script}, Timeout: "1m"}
}

// TestRolloutHooks: a rolling rollout runs its pre hook before it replaces anything and
// its post hook once all are replaced; a failing pre hook fails a recreate rollout before
// any instance goes; a failing post hook fails a canary rollout after its promotion. Each
// hook instance is deleted and never counted.
func TestRolloutHooks(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 0, 3)
	env.scaleTo(t, 2)

	// Rolling, both hooks pass.
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		setVersion("2")(put)
		put.Rollout = api.DeploymentShapeRollout{
			Pre:  hook(`echo "migrating $LXD_DEPLOYD_DEPLOYMENT/$LXD_DEPLOYD_SHAPE to revision $LXD_DEPLOYD_REVISION ($LXD_DEPLOYD_HOOK)"; test -s "$LXD_DEPLOYD_DEPLOYER_FILE"; sleep 2`),
			Post: hook(`echo "smoke test passed"`),
		}
	})
	stop := env.startSamplingBounds(t)
	op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)
	n := int(op.Metadata["rollout"].(float64))
	r := env.waitRollout(t, n, 3*time.Minute, "complete", "failed")
	seen := stop()
	if r.Status != "complete" || r.Pre == nil || r.Post == nil || *r.Pre.ExitCode != 0 || *r.Post.ExitCode != 0 {
		t.Fatalf("hooks: %+v pre %+v post %+v\n%s", r, r.Pre, r.Post, env.d.Log())
	}

	if !strings.Contains(r.Pre.Output, fmt.Sprintf("migrating dep1/web to revision %d (pre)", r.Revision)) || !strings.Contains(r.Post.Output, "smoke test passed") {
		t.Fatalf("hook output: pre %q post %q", r.Pre.Output, r.Post.Output)
	}

	if seen.most > 3 {
		t.Fatalf("web held %d instances (maximum 3)", seen.most)
	}

	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	for _, i := range instances {
		if i.CreatedAt.Before(*r.Pre.FinishedAt) {
			t.Fatalf("%s was made at %s, before the pre hook ended at %s", i.Name, i.CreatedAt, r.Pre.FinishedAt)
		}

		if i.CreatedAt.After(r.Post.StartedAt) {
			t.Fatalf("the post hook started at %s, before %s was made at %s", r.Post.StartedAt, i.Name, i.CreatedAt)
		}
	}

	for _, v := range env.versions(t) {
		if v != "2" {
			t.Fatalf("after the rollout: %v", env.versions(t))
		}
	}

	env.waitNoDeployer(t, "hooks passed")

	// Recreate, the pre hook fails: nothing is replaced.
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		setVersion("3")(put)
		put.Rollout = api.DeploymentShapeRollout{Strategy: api.RolloutRecreate, Pre: hook("echo cannot migrate >&2; exit 3")}
	})
	_, err = env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)
	r = env.waitRollout(t, n+1, 2*time.Minute, "failed", "complete")
	if r.Status != "failed" || !strings.Contains(r.Reason, "pre hook") || !strings.Contains(r.Reason, "exited 3: cannot migrate") {
		t.Fatalf("failed pre hook: %+v %+v", r, r.Pre)
	}

	for _, v := range env.versions(t) {
		if v != "2 (outdated)" {
			t.Fatalf("a failed pre hook replaced instances: %v", env.versions(t))
		}
	}

	env.waitNoDeployer(t, "pre failed")

	// Canary, the post hook fails after the promotion.
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		setVersion("4")(put)
		put.Rollout = api.DeploymentShapeRollout{Strategy: api.RolloutCanary, Canary: &api.DeploymentShapeRolloutCanary{Count: 1}, Post: hook("echo smoke test failed; exit 2")}
	})
	_, err = env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)
	env.waitRollout(t, n+2, 2*time.Minute, "paused")
	must(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", n+2, "promote"))
	r = env.waitRollout(t, n+2, 3*time.Minute, "failed", "complete")
	if r.Status != "failed" || !strings.Contains(r.Reason, "post hook") || !strings.Contains(r.Reason, "exited 2: smoke test failed") || r.Pre != nil {
		t.Fatalf("failed post hook: %+v %+v", r, r.Post)
	}

	watched, err := env.readOnly.GetDeploymentShapeRollout("dep1", "web", n+2)
	must(t, err)
	if watched.Post == nil || watched.Post.Output != "" {
		t.Fatalf("a read-only key sees a hook without its output: %+v", watched.Post)
	}

	env.waitNoDeployer(t, "post failed")

	// Paused while its pre hook runs: the hook is not killed, and the rollout judges its
	// end once resumed.
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		setVersion("5")(put)
		put.Rollout = api.DeploymentShapeRollout{Pre: hook("sleep 4; echo migrated")}
	})
	_, err = env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)
	env.waitUntil(t, "the pre hook runs", time.Minute, func() bool {
		r, err = env.admin.GetDeploymentShapeRollout("dep1", "web", n+3)
		return err == nil && r.Phase == "pre-hook" && len(env.deployers(t)) == 1
	})
	must(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", n+3, "pause"))
	env.waitUntil(t, "the hook ends while paused", time.Minute, func() bool {
		r, err = env.admin.GetDeploymentShapeRollout("dep1", "web", n+3)
		return err == nil && r.Pre != nil && r.Pre.ExitCode != nil
	})
	if r.Status != "paused" || *r.Pre.ExitCode != 0 || !strings.Contains(r.Pre.Output, "migrated") {
		t.Fatalf("a paused rollout's hook runs to its end: %+v %+v", r, r.Pre)
	}

	must(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", n+3, "resume"))
	env.waitRollout(t, n+3, 2*time.Minute, "complete")
	env.waitNoDeployer(t, "paused hook")
}
