package fleet

import (
	"context"
	"database/sql"
	"strconv"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The activity log (GET /1.0/deployments/{deployment}/activity): every entry is written in
// the transaction of the change it records, so the log never says what did not happen.

// defaultActivityKeep is the default of the deployment config key activity.keep.
const defaultActivityKeep = 1000

// RecordActivity appends to the deployment's activity log in the caller's transaction.
func RecordActivity(ctx context.Context, tx *sql.Tx, deploymentID int64, entry api.DeploymentActivity) error {
	keep, err := DeploymentConfigInt(ctx, tx, deploymentID, "activity.keep", defaultActivityKeep)
	if err != nil {
		return err
	}

	if entry.Who == "" {
		// A deployments certificate's key decides who: unresolved, a governor's HTTPS
		// request would read as an admin's, and its entries would count toward the
		// admin's share of activity.keep (db.CreateActivity).
		entry.Requestor, err = WithKey(ctx, tx, entry.Requestor, deploymentID)
		if err != nil {
			return err
		}

		entry.Who = ActivityWho(entry.Requestor)
	}

	entry.Time = time.Now()
	return db.CreateActivity(ctx, tx, deploymentID, entry, keep)
}

// ActivityWho sorts a requestor into the activity log's who: governor (a deployment key),
// admin, or the daemon's own component (rollout, reconcile, autoheal, ...).
func ActivityWho(by api.DeploymentRequestor) string {
	switch {
	case by.Protocol == api.RequestorInternal:
		return by.Name
	case by.Key != "" || by.Protocol == auth.ProtocolGovernor:
		return "governor"
	default:
		return db.ActivityAdmin
	}
}

// StaleLaunchDropped is package main's launchDropped for reconcile, in the transaction
// that removes the record of a launch a crash cut short before LXD made the instance: the
// reservation moved a running rollout's size when the record says so (a rollout would
// otherwise make one instance too many).
func StaleLaunchDropped(row db.Instance) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		why := "launch of " + row.Name + " never finished (the daemon stopped before LXD made it)"
		return UndoLaunch(ctx, tx, row.DeploymentID, row.Shape, api.InternalRequestor("reconcile"), why, row.SizesRollout)
	}
}

// UndoLaunch records a launch's record gone (the shape's size read here no longer counts
// it) and moves a running rollout's size back when sized.
func UndoLaunch(ctx context.Context, tx *sql.Tx, deploymentID int64, shapeName string, by api.DeploymentRequestor, why string, sized bool) error {
	shape, err := db.GetShape(ctx, tx, deploymentID, shapeName)
	if err != nil {
		return err
	}

	err = RecordActivity(ctx, tx, deploymentID, api.DeploymentActivity{Shape: shape.Name, Action: "scale-down", From: shape.ScalingCurrent + 1, To: shape.ScalingCurrent, Requestor: by, Why: why})
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

	by, err = WithKey(ctx, tx, by, row.DeploymentID)
	if err != nil {
		return err
	}

	err = RecordActivity(ctx, tx, row.DeploymentID, api.DeploymentActivity{Shape: row.Shape, Action: "scale-down", From: shape.ScalingCurrent + 1, To: shape.ScalingCurrent, Requestor: by, Why: "delete " + row.Name + " (" + why + ")"})
	if err != nil {
		return err
	}

	return db.AdjustRolloutSize(ctx, tx, shape.ID, -1)
}

// ReconcileActivity records, in reconcile's transaction, a size change reconcile found: an
// instance gone from LXD (-1) or back (+1). The size read there already counts the change.
func ReconcileActivity(row db.Instance, delta int, why string) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		shape, err := db.GetShape(ctx, tx, row.DeploymentID, row.Shape)
		if err != nil {
			return err
		}

		action := "scale-up"
		if delta < 0 {
			action = "scale-down"
		}

		return RecordActivity(ctx, tx, row.DeploymentID, api.DeploymentActivity{Shape: row.Shape, Action: action, From: shape.ScalingCurrent - delta, To: shape.ScalingCurrent, Requestor: api.InternalRequestor("reconcile"), Why: why})
	}
}

// WithKey adds the deployment key a deployments certificate acts through on a deployment:
// certificates are shared across deployments, keys say which grant was used.
func WithKey(ctx context.Context, tx *sql.Tx, by api.DeploymentRequestor, deploymentID int64) (api.DeploymentRequestor, error) {
	if by.Fingerprint == "" || by.Key != "" {
		return by, nil
	}

	keys, err := db.GetKeys(ctx, tx, db.KeyFilter{Fingerprint: by.Fingerprint, DeploymentID: deploymentID})
	if err != nil {
		return by, err
	}

	if len(keys) > 0 {
		by.Key = keys[0].Name
	}

	return by, nil
}

// DeploymentConfigInt reads a whole-number deployment config key (validated on write).
func DeploymentConfigInt(ctx context.Context, tx *sql.Tx, deploymentID int64, key string, def int) (int, error) {
	value, err := db.GetDeploymentConfigValue(ctx, tx, deploymentID, key)
	if err != nil || value == "" {
		return def, err
	}

	n, err := strconv.Atoi(value)
	if err != nil {
		return def, nil
	}

	return n, nil
}
