package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// SetShapeHealthCheck records whether a shape's check could start (health.CheckState):
// state is "", api.HealthCheckOK or api.HealthCheckBroken, with why when broken. health
// is the shape's health object as the checker read it: a shape whose health object changed
// meanwhile keeps its state, which then belongs to the new check.
func SetShapeHealthCheck(ctx context.Context, tx *sql.Tx, id int64, health *api.DeploymentShapeHealth, state string, reason string) error {
	encoded, _, _, err := marshalLifecycle(api.DeploymentShapePut{Health: health})
	if err != nil {
		return err
	}

	_, err = tx.ExecContext(ctx, "UPDATE deployments_shapes SET health_check = ?, health_check_reason = ? WHERE id = ? AND health = ?", state, reason, id, encoded)
	if err != nil {
		return fmt.Errorf("record the shape's health check state: %w", err)
	}

	return nil
}

// SetShapeHealHold records why autohealing holds for a shape (empty: it does not), since
// since (kept while the hold goes on with another reason).
func SetShapeHealHold(ctx context.Context, tx *sql.Tx, id int64, reason string, since *time.Time) error {
	if reason == "" {
		since = nil
	}

	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes SET heal_hold = ?, heal_hold_since = ? WHERE id = ?", reason, since, id)
	if err != nil {
		return fmt.Errorf("record the shape's autohealing hold: %w", err)
	}

	return nil
}

// LocationHealth counts the created instances on one LXD member (location "" outside a
// cluster) of a set of shapes, and those of them unhealthy outside a hook.
type LocationHealth struct {
	Created   int
	Unhealthy int

	// Failing counts the created instances outside a hook whose latest checks failed but
	// that are not unhealthy yet: a shared fault shows on them a check or two later.
	Failing int
}

// GetHealthByLocation counts, per shape and LXD member, the created instances of the
// given shapes and the unhealthy ones: what autohealing's holds weigh (fleet.PlanHolds).
func GetHealthByLocation(ctx context.Context, tx *sql.Tx, shapeIDs []int64) (map[int64]map[string]LocationHealth, error) {
	counts := map[int64]map[string]LocationHealth{}
	if len(shapeIDs) == 0 {
		return counts, nil
	}

	args := []any{api.HealthUnhealthy, api.HealthUnhealthy, InstanceCreated}
	for _, id := range shapeIDs {
		args = append(args, id)
	}

	rows, err := tx.QueryContext(ctx, `
SELECT i.deployment_shape_id, i.location, COUNT(*), SUM(CASE WHEN i.health = ? AND i.hook = '' THEN 1 ELSE 0 END),
       SUM(CASE WHEN i.health != ? AND i.hook = '' AND i.health_streak < 0 THEN 1 ELSE 0 END)
  FROM deployments_shapes_instances i
 WHERE i.state = ? AND i.deployment_shape_id IN (`+placeholders(len(shapeIDs))+`)
 GROUP BY i.deployment_shape_id, i.location`, args...)
	if err != nil {
		return nil, fmt.Errorf("count instances' health by member: %w", err)
	}

	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id int64
		var location string
		var h LocationHealth
		err = rows.Scan(&id, &location, &h.Created, &h.Unhealthy, &h.Failing)
		if err != nil {
			return nil, fmt.Errorf("count instances' health by member: %w", err)
		}

		if counts[id] == nil {
			counts[id] = map[string]LocationHealth{}
		}

		counts[id][location] = h
	}

	return counts, rows.Err()
}

// healthStatus is a shape's health_status from its columns; nil without a health object.
func healthStatus(s *Shape) *api.DeploymentShapeHealthStatus {
	if s.Health == nil {
		return nil
	}

	status := &api.DeploymentShapeHealthStatus{Check: s.HealthCheck, CheckReason: s.HealthCheckReason, Autohealing: api.AutohealingActive}
	if status.Check == "" {
		status.Check = api.HealthCheckUnknown
	}

	switch {
	case !s.Health.Replace:
		status.Autohealing = api.AutohealingOff
	case s.HealHold != "":
		status.Autohealing, status.AutohealingReason, status.Since = api.AutohealingHeld, s.HealHold, s.HealHoldSince
	}

	return status
}
