package rollout

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The custom strategy (seed 002, "Deployer Image"): a rollout launches a transient
// deployer instance from the admin's image, hands it the rollout and a credential good
// for the governor API on the shape only, and follows it: exit code 0 completes the
// rollout, anything else fails it. The deployer is no instance of the shape (no instance
// row, no user.lxd-deployd.deployment key), so it never counts toward the bounds and
// reconcile never adopts or reports it; what it launches and deletes goes through the same
// bound checks as any governor's calls.
//
// Every decision is made from rows, as for the built-in strategies: the deployer's row is
// written before LXD makes it; a follower goroutine records its end (exit code and output)
// and the next step decides; a sweep deletes deployers whose work is over, whatever ended
// it (exit, failure, cancel, timeout, deadline, forced shape delete, a daemon restart).
// The pre and post hooks of the built-in strategies are transient instances of the same
// kind (transient.go), whose exit code gates the rollout's first and last step.

const (
	// CredentialPrefix starts every deployer credential, which is
	// <prefix><rollout id>-<64 hex digits>: governor tokens (JWTs) never start so.
	CredentialPrefix = "lxdd-deployer-"

	// ConfigDeployer marks a rollout's transient instance in LXD:
	// <deployment>/<shape>/<rollout> for a deployer, .../<rollout>/pre or /post for a hook.
	ConfigDeployer = "user.lxd-deployd.deployer"

	// deployerOutputLimit is how much of a transient's output is kept (its end).
	deployerOutputLimit = 64 << 10
)

// UsesDeployer says whether a rollout is carried out by a deployer: a custom one, except
// the revert of a failed or aborted rollout, which is a built-in rolling rollout (the
// deployer that just failed is not trusted to undo its own work).
func UsesDeployer(r db.Rollout) bool {
	return r.Strategy.Strategy == api.RolloutCustom && r.Cause != CauseAutoRevert && r.Cause != CauseAbort
}

// ParseCredential splits a deployer credential into its rollout id and secret.
func ParseCredential(raw string) (int64, string, bool) {
	rest, found := strings.CutPrefix(raw, CredentialPrefix)
	if !found {
		return 0, "", false
	}

	id, secret, found := strings.Cut(rest, "-")
	var n int64
	_, err := fmt.Sscan(id, &n)
	if !found || err != nil || n <= 0 || len(secret) != 64 {
		return 0, "", false
	}

	return n, rest[len(id)+1:], true
}

// UsesHooks says whether a rollout runs its pre and post hooks: a built-in one, except a
// revert (going back should not wait on the hooks that gate going forward; and a revert
// after a failed hook would run it again).
func UsesHooks(r db.Rollout) bool {
	return r.Strategy.Strategy != api.RolloutCustom && r.Cause != CauseAutoRevert && r.Cause != CauseAbort
}

// stepCustom moves a custom rollout: start its deployer, follow it, and judge its end.
func (e *Engine) stepCustom(ctx context.Context, client *backend.Conn, r db.Rollout) error {
	v, err := e.observe(ctx, client, r)
	if err != nil {
		return err
	}

	state, d, err := e.driveTransient(ctx, client, r, v, specFor(r, db.KindDeployer))
	switch {
	case state == transientSucceeded:
		return e.finish(ctx, r, api.RolloutComplete, fmt.Sprintf("deployer %s exited 0", d.Instance), reporter.RolloutCompleted)
	case state == transientEnded || d == nil || err != nil:
		return err
	}

	// The deployer's launches are progress as a built-in strategy's are.
	v.plan.Phase = "deploy"
	now := time.Now()
	err = e.recordStep(ctx, r, v, now)
	if errors.Is(err, errNothingToRecord) || errors.Is(err, db.ErrRolloutChanged) || errors.Is(err, db.ErrRolloutClaimLost) {
		return nil
	}

	if err == nil && v.progress {
		e.reporter.RolloutEvent(Requestor, refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: r.Project, Name: r.Deployment}, Shape: r.Shape}, r.DeploymentID, r.Number, reporter.RolloutStep)
	}

	return err
}

// hookGate runs a built-in rollout's pre or post hook when it has one: true once the hook
// exited 0 (or there is none), false while it runs or after it failed the rollout.
func (e *Engine) hookGate(ctx context.Context, client *backend.Conn, r db.Rollout, v *rolloutView, kind string) (bool, error) {
	if !UsesHooks(r) || (kind == db.KindPre && r.Strategy.Pre == nil) || (kind == db.KindPost && r.Strategy.Post == nil) {
		return true, nil
	}

	state, _, err := e.driveTransient(ctx, client, r, v, specFor(r, kind))
	return state == transientSucceeded, err
}
