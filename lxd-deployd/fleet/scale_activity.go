package fleet

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ScaleActivity records a launch (+1) or delete (-1) in the activity log, in the
// reservation's transaction; a change that is not a rollout's own also moves the size a
// running rollout of the shape keeps, so the governor keeps scaling during a rollout.
func ScaleActivity(ctx context.Context, tx *sql.Tx, deploymentID int64, shape *db.Shape, instance string, delta int, c Change) error {
	by, err := WithKey(ctx, tx, c.By, deploymentID)
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

	if c.Why != "" {
		why += " (" + c.Why + ")"
	}

	err = RecordActivity(ctx, tx, deploymentID, api.DeploymentActivity{Shape: shape.Name, Action: action, From: from, To: shape.ScalingCurrent + delta, Requestor: by, Why: why})
	if err != nil || c.FromRollout || c.replaces != "" {
		return err
	}

	return db.AdjustRolloutSize(ctx, tx, shape.ID, delta)
}

// launchDropped undoes, in the transaction that drops a failed launch's record, what its
// reservation recorded: the activity log says the size went back, and a running rollout's
// size moves back when the launch had moved it.
func launchDropped(ctx context.Context, tx *sql.Tx, p *pendingLaunch) error {
	return UndoLaunch(ctx, tx, p.deploymentID, p.ref.Shape, p.by, "launch of "+p.ref.Instance+" failed", p.sized)
}
