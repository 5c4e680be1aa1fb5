package db

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestRolloutPruneKeepsNewestAndNamedOnes: creating a rollout prunes the shape's finished
// rollouts beyond rollouts.keep, but never an unfinished one, nor one a kept revision or
// activity entry names.
func TestRolloutPruneKeepsNewestAndNamedOnes(t *testing.T) {
	c := newTestCluster(t)
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		shapeID, err := createWebShape(ctx, tx)
		if err != nil {
			return err
		}

		var deploymentID int64
		err = tx.QueryRowContext(ctx, "SELECT deployment_id FROM deployments_shapes WHERE id = ?", shapeID).Scan(&deploymentID)
		if err != nil {
			return err
		}

		_, err = tx.ExecContext(ctx, "INSERT INTO deployments_config (deployment_id, key, value) VALUES (?, 'rollouts.keep', '3')", deploymentID)
		if err != nil {
			return err
		}

		// Rollout 2 is named by an activity entry, rollout 4 by a revision's notes.
		err = CreateActivity(ctx, tx, deploymentID, api.DeploymentActivity{Shape: "web", Action: "rollout-complete", Why: "rollout 2: done", Time: time.Now()}, 1000)
		if err != nil {
			return err
		}

		err = CreateRevision(ctx, tx, shapeID, api.DeploymentShapeRevision{Revision: 1, Cause: "rollback to 1", Notes: "revert of rollout 4", CreatedAt: time.Now()})
		if err != nil {
			return err
		}

		finished := api.RolloutComplete
		for n := 1; n <= 12; n++ {
			number, err := CreateRollout(ctx, tx, shapeID, api.DeploymentRollout{Status: api.RolloutRunning, Revision: 1, Size: 1}, time.Now())
			if err != nil {
				return err
			}

			if n == 12 {
				break // the newest stays running
			}

			r, err := GetRollout(ctx, tx, shapeID, number)
			if err != nil {
				return err
			}

			err = UpdateRollout(ctx, tx, r.ID, api.RolloutRunning, RolloutUpdate{Status: &finished}, time.Now())
			if err != nil {
				return err
			}
		}

		rows, err := tx.QueryContext(ctx, "SELECT number FROM deployments_shapes_rollouts WHERE deployment_shape_id = ? ORDER BY number", shapeID)
		if err != nil {
			return err
		}

		defer func() { _ = rows.Close() }()
		var kept []int
		for rows.Next() {
			var n int
			err = rows.Scan(&n)
			if err != nil {
				return err
			}

			kept = append(kept, n)
		}

		// Rollout 12 pruned 1..8 but 2 and 4; the three newest finished before it are 9..11.
		if fmt.Sprint(kept) != "[2 4 9 10 11 12]" {
			t.Errorf("kept rollouts %v, want [2 4 9 10 11 12]", kept)
		}

		return rows.Err()
	})
}
