package rollout

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Rollback is POST .../rollback in the caller's transaction: the shape goes back to
// revision (RollbackShape), a rollout of it starts when asked (req.Rollout, by default
// when the restored trigger is config-change and the deployment's triggers are not
// suspended), and the answer is the plan: the changed fields, the instances left
// outdated, the suspended triggers. A dry run is this transaction, rolled back.
func Rollback(ctx context.Context, tx *sql.Tx, shape *db.Shape, req api.DeploymentShapeRollbackPost, template bool, by api.DeploymentRequestor) (api.DeploymentShapeRollback, error) {
	var result api.DeploymentShapeRollback
	after, out, err := RollbackShape(ctx, tx, shape, req.Revision, template, req.Scaling, RevisionArgs{Cause: CauseRollbackTo(req.Revision), By: by, Notes: req.Notes, Always: true})
	if err != nil {
		return result, err
	}

	roll, _ := after.Rollout.TriggerOf(api.RolloutTriggerConfigChange)
	if req.Rollout != nil {
		roll = *req.Rollout
	} else if roll {
		roll, err = deploymentNotSuspended(ctx, tx, shape.DeploymentID)
		if err != nil {
			return result, err
		}
	}

	if roll {
		out.Rollout, err = Start(ctx, tx, after, CauseRollbackTo(req.Revision), by, req.Notes, false, false)
		if err != nil {
			return result, err
		}
	}

	err = fleet.RecordActivity(ctx, tx, shape.DeploymentID, api.DeploymentActivity{Shape: shape.Name, Action: "rollback", From: shape.Revision, To: out.Revision, Requestor: by, Why: fmt.Sprintf("rollback to revision %d", req.Revision)})
	if err != nil {
		return result, err
	}

	rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
	if err != nil {
		return result, err
	}

	result = api.DeploymentShapeRollback{Revision: out.Revision, Rollout: out.Rollout, Changes: shapes.Changes(shape.Writable(), after.Writable()), Outdated: []string{}, TriggersSuspended: after.TriggersSuspended}
	for _, row := range rows {
		if !shapes.Going(row) && shapes.Outdated(row, after.Revision) {
			result.Outdated = append(result.Outdated, row.Name)
		}
	}

	switch {
	case out.Rollout != 0:
		result.Message = fmt.Sprintf("rollout %d replaces the %d outdated instances", out.Rollout, len(result.Outdated))
	case len(result.Outdated) == 0:
		result.Message = "no running instance is outdated: nothing to replace"
	default:
		result.Message = fmt.Sprintf("the template changed for new instances only: start a rollout to replace the %d outdated instances", len(result.Outdated))
	}

	if result.TriggersSuspended != nil {
		result.Message += "; the shape's image triggers are suspended until POST .../triggers/resume"
	}

	return result, nil
}

// deploymentNotSuspended is !deploymentSuspended.
func deploymentNotSuspended(ctx context.Context, tx *sql.Tx, deploymentID int64) (bool, error) {
	suspended, err := deploymentSuspended(ctx, tx, deploymentID)
	return !suspended, err
}
