package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The schedule columns are read and written apart from the shape's main row, as placement
// is, so that the other fields' queries stay as they are.

// loadShapeSchedules fills in the schedule of each shape read by GetShapes.
func loadShapeSchedules(ctx context.Context, tx *sql.Tx, shapes []Shape) error {
	byID := make(map[int64]*Shape, len(shapes))
	for i := range shapes {
		byID[shapes[i].ID] = &shapes[i]
	}

	rows, err := tx.QueryContext(ctx, "SELECT id, schedule FROM deployments_shapes WHERE schedule != ''")
	if err != nil {
		return fmt.Errorf("read shape schedules: %w", err)
	}

	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id int64
		var schedule string
		err = rows.Scan(&id, &schedule)
		if err != nil {
			return fmt.Errorf("read shape schedules: %w", err)
		}

		s := byID[id]
		if s == nil {
			continue
		}

		err = json.Unmarshal([]byte(schedule), &s.Schedule)
		if err != nil {
			return fmt.Errorf("shape %q has a corrupt schedule: %w", s.Name, err)
		}
	}

	return rows.Err()
}

// setShapeSchedule stores a shape's schedule (absent: empty). Removing it forgets where
// the scheduler was, so that a schedule added later fires only occurrences after it is
// first seen, not those of the time it was absent; an edited schedule keeps its place, so
// no occurrence falls between the edit and the scheduler's next look.
func setShapeSchedule(ctx context.Context, tx *sql.Tx, id int64, schedule []api.DeploymentShapeScheduledAction) error {
	value := ""
	if len(schedule) > 0 {
		data, err := json.Marshal(schedule)
		if err != nil {
			return err
		}

		value = string(data)
	}

	_, err := tx.ExecContext(ctx, `
UPDATE deployments_shapes
   SET schedule = ?,
       schedule_checked_at = CASE WHEN ? = '' THEN NULL ELSE schedule_checked_at END
 WHERE id = ?`, value, value, id)
	if err != nil {
		return fmt.Errorf("store shape schedule: %w", err)
	}

	return nil
}

// ScheduleState is where the scheduler is with a shape's schedule.
type ScheduleState struct {
	ShapeID      int64
	DeploymentID int64
	Shape        string
	Schedule     []api.DeploymentShapeScheduledAction

	// CheckedAt is the time up to which occurrences were looked at (nil: not yet).
	CheckedAt *time.Time

	// LastAction fired last, for the occurrence LastAt.
	LastAction string
	LastAt     *time.Time
}

// GetScheduleStates returns the state of every shape with a schedule, or of one shape
// (shapeID != 0) whether it has one or not.
func GetScheduleStates(ctx context.Context, tx *sql.Tx, shapeID int64) ([]ScheduleState, error) {
	query := "SELECT id, deployment_id, name, schedule, schedule_checked_at, schedule_last, schedule_last_at FROM deployments_shapes WHERE schedule != ''"
	var args []any
	if shapeID != 0 {
		query = "SELECT id, deployment_id, name, schedule, schedule_checked_at, schedule_last, schedule_last_at FROM deployments_shapes WHERE id = ?"
		args = append(args, shapeID)
	}

	rows, err := tx.QueryContext(ctx, query+" ORDER BY id", args...)
	if err != nil {
		return nil, fmt.Errorf("read schedules: %w", err)
	}

	defer func() { _ = rows.Close() }()
	states := []ScheduleState{}
	for rows.Next() {
		var s ScheduleState
		var schedule string
		var checked, lastAt sql.NullTime
		err = rows.Scan(&s.ShapeID, &s.DeploymentID, &s.Shape, &schedule, &checked, &s.LastAction, &lastAt)
		if err != nil {
			return nil, fmt.Errorf("read schedules: %w", err)
		}

		if schedule != "" {
			err = json.Unmarshal([]byte(schedule), &s.Schedule)
			if err != nil {
				return nil, fmt.Errorf("shape %q has a corrupt schedule: %w", s.Shape, err)
			}
		}

		if checked.Valid {
			t := checked.Time.UTC()
			s.CheckedAt = &t
		}

		if lastAt.Valid {
			t := lastAt.Time.UTC()
			s.LastAt = &t
		}

		states = append(states, s)
	}

	return states, rows.Err()
}

// SetScheduleChecked records that a shape's occurrences up to at were looked at.
func SetScheduleChecked(ctx context.Context, tx *sql.Tx, shapeID int64, at time.Time) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes SET schedule_checked_at = ? WHERE id = ?", at.UTC(), shapeID)
	if err != nil {
		return fmt.Errorf("record schedule check: %w", err)
	}

	return nil
}

// SetScheduleFired records the action that fired, for its occurrence at.
func SetScheduleFired(ctx context.Context, tx *sql.Tx, shapeID int64, action string, at time.Time) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes SET schedule_last = ?, schedule_last_at = ? WHERE id = ?", action, at.UTC(), shapeID)
	if err != nil {
		return fmt.Errorf("record scheduled action: %w", err)
	}

	return nil
}

// SetShapeBounds sets a shape's scaling bounds and nothing else (a scheduled action): it
// leaves the degraded status a full update clears, since no one changed the shape's
// instances or checks.
func SetShapeBounds(ctx context.Context, tx *sql.Tx, shapeID int64, minimum int, maximum int) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes SET scaling_minimum = ?, scaling_maximum = ? WHERE id = ?", minimum, maximum, shapeID)
	if err != nil {
		return fmt.Errorf("set shape bounds: %w", err)
	}

	return nil
}
