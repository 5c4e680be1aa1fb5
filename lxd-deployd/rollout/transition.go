package rollout

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// fence checks the claim for the engine's own decisions (by Requestor), in their
// transaction; a user's pause, cancel or abort through the API applies whoever works on
// the rollout.
func (e *Engine) fence(ctx context.Context, tx *sql.Tx, r db.Rollout, by api.DeploymentRequestor) error {
	if by != Requestor {
		return nil
	}

	return e.claim.check(ctx, tx, r, time.Now())
}

// Transition moves a rollout from one status to another, with its activity entry and
// events. A rollout no longer in from is left alone (409).
func (e *Engine) Transition(ctx context.Context, r db.Rollout, from string, to string, phase string, reason string, action reporter.RolloutAction, by api.DeploymentRequestor) error {
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := e.fence(ctx, tx, r, by)
		if err != nil {
			return err
		}

		err = db.UpdateRollout(ctx, tx, r.ID, from, db.RolloutUpdate{Status: &to, Phase: &phase, Reason: &reason, Progress: to == api.RolloutRunning}, time.Now())
		if errors.Is(err, db.ErrRolloutChanged) {
			return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is not %s (it changed meanwhile): read it again", r.Number, from)
		}

		if err != nil {
			return err
		}

		return fleet.RecordActivity(ctx, tx, r.DeploymentID, api.DeploymentActivity{Shape: r.Shape, Action: "rollout-" + to, Requestor: by, Why: fmt.Sprintf("rollout %d: %s", r.Number, reason)})
	})
	if err != nil {
		return err
	}

	e.reporter.RolloutEvent(by, refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: r.Project, Name: r.Deployment}, Shape: r.Shape}, r.DeploymentID, r.Number, action)
	e.Poke()
	return nil
}

// finish ends a running rollout.
func (e *Engine) finish(ctx context.Context, r db.Rollout, status string, reason string, action reporter.RolloutAction) error {
	return e.Transition(ctx, r, api.RolloutRunning, status, "done", reason, action, Requestor)
}

// fail ends a rollout that cannot go on; with auto_revert (and unless it is itself a
// revert) the shape goes back to the last revision whose rollout completed, rolled out.
func (e *Engine) fail(ctx context.Context, r db.Rollout, reason string) error {
	var shape *db.Shape
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		shape, err = ShapeByID(ctx, tx, r.DeploymentID, r.ShapeID)
		return err
	})
	if err != nil {
		return err
	}

	if !shape.Rollout.AutoRevert || r.Cause == CauseAutoRevert || r.Cause == CauseAbort {
		return e.Transition(ctx, r, api.RolloutRunning, api.RolloutFailed, "done", reason, reporter.RolloutFailed, Requestor)
	}

	return e.Revert(ctx, r, api.RolloutRunning, CauseAutoRevert, reason, Requestor)
}

// Revert ends a rollout as reverted and rolls the shape back to the last revision whose
// rollout completed (the revision it started from when none did), in one transaction.
func (e *Engine) Revert(ctx context.Context, r db.Rollout, from string, cause string, reason string, by api.DeploymentRequestor) error {
	var next int
	var target int
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		status, phase := api.RolloutReverted, "done"
		err := e.fence(ctx, tx, r, by)
		if err != nil {
			return err
		}

		target, err = db.GetLastCompleteRevision(ctx, tx, r.ShapeID)
		if err != nil {
			return err
		}

		if target == 0 {
			target = r.FromRevision
		}

		text := fmt.Sprintf("%s; reverted to revision %d", reason, target)
		err = db.UpdateRollout(ctx, tx, r.ID, from, db.RolloutUpdate{Status: &status, Phase: &phase, Reason: &text}, time.Now())
		if errors.Is(err, db.ErrRolloutChanged) {
			return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is not %s", r.Number, from)
		}

		if err != nil {
			return err
		}

		err = fleet.RecordActivity(ctx, tx, r.DeploymentID, api.DeploymentActivity{Shape: r.Shape, Action: "rollout-reverted", Requestor: by, Why: fmt.Sprintf("rollout %d: %s", r.Number, text)})
		if err != nil {
			return err
		}

		shape, err := ShapeByID(ctx, tx, r.DeploymentID, r.ShapeID)
		if err != nil {
			return err
		}

		shape, _, err = RollbackShape(ctx, tx, shape, target, true, false, RevisionArgs{Cause: CauseRollbackTo(target), By: by, Notes: fmt.Sprintf("%s of rollout %d", cause, r.Number), Always: true})
		if err != nil {
			return err
		}

		// The revert is a rolling rollout whatever the strategy: canaries are not
		// re-tested on the way back.
		next, err = Start(ctx, tx, shape, cause, by, fmt.Sprintf("revert of rollout %d", r.Number), true, false)
		return err
	})
	if err != nil {
		return err
	}

	ref := refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: r.Project, Name: r.Deployment}, Shape: r.Shape}
	e.reporter.RolloutEvent(by, ref, r.DeploymentID, r.Number, reporter.RolloutReverted)
	e.reporter.RolloutEvent(by, ref, r.DeploymentID, next, reporter.RolloutStarted)
	e.fleet.RefillPools() // the pool is of the abandoned revision
	e.Poke()
	return nil
}
