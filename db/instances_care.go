package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The reads of the background loops that care for instances (lxd-deployd/fleet). Each asks
// only for the rows its round can act on, so that a round at rest reads next to nothing
// however many instances there are: reading every row every second was most of the
// daemon's CPU at rest with 1,000 instances (issue 20). Each returns rows a superset of what
// the loop's planner picks, and the planner still decides; a test per query holds the two
// to one answer.

// GetInstancesInHooks returns the created instances that wait in a lifecycle hook: the only
// rows the hook keeper acts on.
func GetInstancesInHooks(ctx context.Context, tx *sql.Tx) ([]Instance, error) {
	return queryInstances(ctx, tx, []string{instanceRow.In(InstanceCreated), "i.hook != ''"}, nil)
}

// GetHealCandidates returns the instances of the given shapes that autohealing may act on
// (fleet.PlanHealing): replacing or missing, or created and either unhealthy outside a hook
// or on an LXD member not among online. online nil means no cluster (nothing unreachable);
// in a cluster a location that is no online member's is unreachable, as
// shapes.Unreachable has it.
func GetHealCandidates(ctx context.Context, tx *sql.Tx, shapeIDs []int64, online []string) ([]Instance, error) {
	if len(shapeIDs) == 0 {
		return []Instance{}, nil
	}

	args := []any{api.HealthUnhealthy}
	unreachable := "0"
	if online != nil {
		unreachable = "i.location != ''"
		if len(online) > 0 {
			unreachable += " AND i.location NOT IN (" + placeholders(len(online)) + ")"
			for _, name := range online {
				args = append(args, name)
			}
		}
	}

	for _, id := range shapeIDs {
		args = append(args, id)
	}

	where := []string{
		"(" + instanceRow.In(InstanceReplacing, InstanceMissing) + " OR (" + instanceRow.In(InstanceCreated) + " AND ((i.health = ? AND i.hook = '') OR (" + unreachable + "))))",
		"i.deployment_shape_id IN (" + placeholders(len(shapeIDs)) + ")",
	}

	return queryInstances(ctx, tx, where, args)
}

// GetOutdatedShapeIDs returns the shapes with a stale instance (rules.Stale: created, of a
// revision older than the shape's latest): the only shapes the in-place pass looks at.
func GetOutdatedShapeIDs(ctx context.Context, tx *sql.Tx) ([]int64, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT DISTINCT i.deployment_shape_id
  FROM deployments_shapes_instances i
  JOIN deployments_shapes s ON s.id = i.deployment_shape_id
 WHERE `+instanceRow.Stale("s")+`
 ORDER BY i.deployment_shape_id`)
	if err != nil {
		return nil, fmt.Errorf("read shapes with outdated instances: %w", err)
	}

	defer func() { _ = rows.Close() }()
	ids := []int64{}
	for rows.Next() {
		var id int64
		err = rows.Scan(&id)
		if err != nil {
			return nil, fmt.Errorf("read shapes with outdated instances: %w", err)
		}

		ids = append(ids, id)
	}

	return ids, rows.Err()
}

// placeholders is n question marks for an IN list.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
