package main

import (
	"context"
	"database/sql"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The activity log (GET /1.0/deployments/{deployment}/activity): every entry is written in
// the transaction of the change it records, so the log never says what did not happen.

// recordActivity appends to the deployment's activity log in the caller's transaction.
func recordActivity(ctx context.Context, tx *sql.Tx, deploymentID int64, entry api.DeploymentActivity) error {
	keep, err := deploymentConfigInt(ctx, tx, deploymentID, "activity.keep", defaultActivityKeep)
	if err != nil {
		return err
	}

	if entry.Who == "" {
		entry.Who = activityWho(entry.Requestor)
	}

	entry.Time = time.Now()
	return db.CreateActivity(ctx, tx, deploymentID, entry, keep)
}

// activityWho sorts a requestor into the activity log's who: governor (a deployment key),
// admin, or the daemon's own component (rollout, reconcile, autoheal, ...).
func activityWho(by api.DeploymentRequestor) string {
	switch {
	case by.Protocol == api.RequestorInternal:
		return by.Name
	case by.Key != "" || by.Protocol == auth.ProtocolGovernor:
		return "governor"
	default:
		return "admin"
	}
}

// scaleActivity records a launch (+1) or delete (-1) in the activity log, in the
// reservation's transaction; a change that is not a rollout's own also moves the size a
// running rollout of the shape keeps, so the governor keeps scaling during a rollout.
func scaleActivity(ctx context.Context, tx *sql.Tx, deploymentID int64, shape *db.Shape, instance string, delta int, c change) error {
	by, err := withKey(ctx, tx, c.by, deploymentID)
	if err != nil {
		return err
	}

	action, verb := "scale-up", "launch"
	if delta < 0 {
		action, verb = "scale-down", "delete"
	}

	why := verb + " " + instance
	from := shape.ScalingCurrent
	if c.replaces != "" {
		// The replaced instance left the count in this transaction: the size is the same.
		action, why, from = "replace", why+" to replace "+c.replaces, shape.ScalingCurrent+delta
	}

	if c.why != "" {
		why += " (" + c.why + ")"
	}

	err = recordActivity(ctx, tx, deploymentID, api.DeploymentActivity{Shape: shape.Name, Action: action, From: from, To: shape.ScalingCurrent + delta, Requestor: by, Why: why})
	if err != nil || c.fromRollout || c.replaces != "" {
		return err
	}

	return db.AdjustRolloutSize(ctx, tx, shape.ID, delta)
}

// launchDropped undoes, in the transaction that drops a failed launch's record, what its
// reservation recorded: the activity log says the size went back, and a running rollout's
// size moves back when the launch had moved it.
func launchDropped(ctx context.Context, tx *sql.Tx, p *pendingLaunch) error {
	return undoLaunch(ctx, tx, p.deploymentID, p.ref.shape, p.by, "launch of "+p.ref.instance+" failed", p.sized)
}

// staleLaunchDropped is launchDropped for reconcile, in the transaction that removes the
// record of a launch a crash cut short before LXD made the instance: the reservation moved
// a running rollout's size when the record says so (a rollout would otherwise make one
// instance too many).
func staleLaunchDropped(row db.Instance) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		why := "launch of " + row.Name + " never finished (the daemon stopped before LXD made it)"
		return undoLaunch(ctx, tx, row.DeploymentID, row.Shape, internalRequestor("reconcile"), why, row.SizesRollout)
	}
}

// undoLaunch records a launch's record gone (the shape's size read here no longer counts
// it) and moves a running rollout's size back when sized.
func undoLaunch(ctx context.Context, tx *sql.Tx, deploymentID int64, shapeName string, by api.DeploymentRequestor, why string, sized bool) error {
	shape, err := db.GetShape(ctx, tx, deploymentID, shapeName)
	if err != nil {
		return err
	}

	err = recordActivity(ctx, tx, deploymentID, api.DeploymentActivity{Shape: shape.Name, Action: "scale-down", From: shape.ScalingCurrent + 1, To: shape.ScalingCurrent, Requestor: by, Why: why})
	if err != nil || !sized {
		return err
	}

	return db.AdjustRolloutSize(ctx, tx, shape.ID, -1)
}

// forcedDeleteActivity records, in the transaction that removes its record, an instance a
// forced delete of its shape or deployment took: a scale-down by whoever forced it. As for
// any delete not a rollout's own, a running rollout's size follows, so a forced delete that
// stops half way is not refilled by the rollout. An instance that no longer counted
// (missing, being replaced) changes no size and gets no entry.
func forcedDeleteActivity(ctx context.Context, tx *sql.Tx, row db.Instance, by api.DeploymentRequestor, why string) error {
	if !shapes.Counted(row) {
		return nil
	}

	shape, err := db.GetShape(ctx, tx, row.DeploymentID, row.Shape)
	if err != nil {
		return err
	}

	by, err = withKey(ctx, tx, by, row.DeploymentID)
	if err != nil {
		return err
	}

	err = recordActivity(ctx, tx, row.DeploymentID, api.DeploymentActivity{Shape: row.Shape, Action: "scale-down", From: shape.ScalingCurrent + 1, To: shape.ScalingCurrent, Requestor: by, Why: "delete " + row.Name + " (" + why + ")"})
	if err != nil {
		return err
	}

	return db.AdjustRolloutSize(ctx, tx, shape.ID, -1)
}

// reconcileActivity records, in reconcile's transaction, a size change reconcile found: an
// instance gone from LXD (-1) or back (+1). The size read there already counts the change.
func reconcileActivity(row db.Instance, delta int, why string) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		shape, err := db.GetShape(ctx, tx, row.DeploymentID, row.Shape)
		if err != nil {
			return err
		}

		action := "scale-up"
		if delta < 0 {
			action = "scale-down"
		}

		return recordActivity(ctx, tx, row.DeploymentID, api.DeploymentActivity{Shape: row.Shape, Action: action, From: shape.ScalingCurrent - delta, To: shape.ScalingCurrent, Requestor: internalRequestor("reconcile"), Why: why})
	}
}
