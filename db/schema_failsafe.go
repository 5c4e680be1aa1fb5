package db

import (
	"context"
	"database/sql"
)

// updateAddFailSafe adds what keeps autohealing from acting on the platform's faults
// (doc/health.md#verdicts-and-holds):
//   - deployments_shapes_instances.health_stale: why the last check could not run (LXD did
//     not answer, exec refused, ...); empty when the last check ran. Such a check is no
//     verdict: the status and streak stay what the last check that ran made them.
//   - deployments_shapes_instances.health_cannot_start: the last failed check could not
//     start its command (exit 126 or 127, a port nothing listens on): a broken check looks
//     like this on every instance.
//   - deployments_shapes.health_check, health_check_reason: "" (not known yet since the
//     check last changed), "ok" (it started on some instance) or "broken" (it could start
//     on none), and why.
//   - deployments_shapes.heal_hold, heal_hold_since: why autohealing holds for the shape
//     (correlated failures, a broken check), empty when it does not.
func updateAddFailSafe(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments_shapes_instances ADD COLUMN health_stale TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes_instances ADD COLUMN health_cannot_start INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments_shapes ADD COLUMN health_check TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes ADD COLUMN health_check_reason TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes ADD COLUMN heal_hold TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes ADD COLUMN heal_hold_since DATETIME;
`)
	return err
}
