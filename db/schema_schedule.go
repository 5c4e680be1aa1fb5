package db

import (
	"context"
	"database/sql"
)

// updateAddSchedule adds a shape's scheduled actions (doc/governors.md, "Scheduled
// actions"): the schedule (JSON list, empty when absent), the time up to which the
// scheduler looked at its occurrences (NULL until it first sees the schedule: it fires
// only occurrences after that), and the action that fired last with its occurrence.
func updateAddSchedule(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments_shapes ADD COLUMN schedule TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes ADD COLUMN schedule_checked_at DATETIME;
ALTER TABLE deployments_shapes ADD COLUMN schedule_last TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes ADD COLUMN schedule_last_at DATETIME;
`)
	return err
}
