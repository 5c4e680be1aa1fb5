package rollout

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Start starts a rollout of a shape's latest revision in the caller's transaction
// and returns its number. When one is already running: refuse says whether that is a 409
// (a user asked) or not (a trigger: the running rollout follows the latest revision).
func Start(ctx context.Context, tx *sql.Tx, shape *db.Shape, cause string, by api.DeploymentRequestor, notes string, promoted bool, refuse bool) (int, error) {
	active, err := db.GetActiveRollout(ctx, tx, shape.ID)
	if err != nil {
		return 0, err
	}

	if active != nil {
		if refuse {
			return 0, lxdapi.StatusErrorf(http.StatusConflict, "shape %s already has rollout %d (%s): wait for it, or cancel it first", shape.Name, active.Number, active.Status)
		}

		if promoted && !active.Promoted {
			err = db.UpdateRollout(ctx, tx, active.ID, active.Status, db.RolloutUpdate{Promoted: &promoted}, time.Now())
			if err != nil {
				return 0, err
			}
		}

		return active.Number, nil
	}

	rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
	if err != nil {
		return 0, err
	}

	// The rollout starts from the newest revision its instances run.
	from := 0
	for _, row := range rows {
		if shapes.Outdated(row, shape.Revision) && row.Revision > from {
			from = row.Revision
		}
	}

	if from == 0 {
		from = max(shape.Revision-1, 0)
	}

	number, err := db.CreateRollout(ctx, tx, shape.ID, api.DeploymentRollout{
		Status: api.RolloutRunning, Phase: "starting", Revision: shape.Revision, FromRevision: from,
		Strategy: shape.Rollout, Cause: cause, Requestor: by, Notes: notes, Size: shape.ScalingCurrent,
	}, time.Now())
	if err != nil {
		return 0, err
	}

	if promoted {
		r, err := db.GetRollout(ctx, tx, shape.ID, number)
		if err != nil {
			return 0, err
		}

		err = db.UpdateRollout(ctx, tx, r.ID, api.RolloutRunning, db.RolloutUpdate{Promoted: &promoted}, time.Now())
		if err != nil {
			return 0, err
		}
	}

	why := fmt.Sprintf("rollout %d of revision %d (%s)", number, shape.Revision, cause)
	if notes != "" {
		why += ": " + notes
	}

	return number, fleet.RecordActivity(ctx, tx, shape.DeploymentID, api.DeploymentActivity{Shape: shape.Name, Action: "rollout-started", From: from, To: shape.Revision, Requestor: by, Why: why})
}
