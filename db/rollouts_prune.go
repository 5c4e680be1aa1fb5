package db

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
)

// DefaultRolloutsKeep is how many finished rollouts a shape keeps when its deployment sets
// no rollouts.keep: image-change triggers start rollouts unattended, so without a bound
// their records would grow forever.
const DefaultRolloutsKeep = 50

// PruneRollouts keeps a shape's newest keep finished rollouts, every unfinished one, and
// any older one that a kept revision's notes or a kept activity entry of the shape names
// ("rollout N: ...", "rollout N of revision ...", "... of rollout N"), so that no history
// still shown points at a rollout that is gone.
func PruneRollouts(ctx context.Context, tx *sql.Tx, shapeID int64, keep int) error {
	_, err := tx.ExecContext(ctx, `
DELETE FROM deployments_shapes_rollouts
 WHERE deployment_shape_id = ?
   AND status NOT IN ('running', 'paused')
   AND id NOT IN (
       SELECT id FROM deployments_shapes_rollouts
        WHERE deployment_shape_id = ? AND status NOT IN ('running', 'paused')
        ORDER BY number DESC LIMIT ?)
   AND NOT EXISTS (
       SELECT 1 FROM deployments_activity a
         JOIN deployments_shapes s ON s.id = deployments_shapes_rollouts.deployment_shape_id
        WHERE a.deployment_id = s.deployment_id AND a.shape = s.name
          AND (a.why LIKE 'rollout ' || deployments_shapes_rollouts.number || ':%'
            OR a.why LIKE 'rollout ' || deployments_shapes_rollouts.number || ' %'
            OR a.why LIKE '%of rollout ' || deployments_shapes_rollouts.number))
   AND NOT EXISTS (
       SELECT 1 FROM deployments_shapes_revisions v
        WHERE v.deployment_shape_id = deployments_shapes_rollouts.deployment_shape_id
          AND v.notes LIKE '%of rollout ' || deployments_shapes_rollouts.number)`,
		shapeID, shapeID, keep)
	if err != nil {
		return fmt.Errorf("prune rollouts: %w", err)
	}

	return nil
}

// rolloutsKeep reads the rollouts.keep of a shape's deployment (DefaultRolloutsKeep when
// unset; the API validates the value).
func rolloutsKeep(ctx context.Context, tx *sql.Tx, shapeID int64) (int, error) {
	var value string
	err := tx.QueryRowContext(ctx, `
SELECT c.value FROM deployments_config c
  JOIN deployments_shapes s ON s.deployment_id = c.deployment_id
 WHERE s.id = ? AND c.key = 'rollouts.keep'`, shapeID).Scan(&value)
	if err == sql.ErrNoRows {
		return DefaultRolloutsKeep, nil
	}

	if err != nil {
		return 0, fmt.Errorf("read rollouts.keep: %w", err)
	}

	n, err := strconv.Atoi(value)
	if err != nil || n < 1 {
		return DefaultRolloutsKeep, nil
	}

	return n, nil
}
