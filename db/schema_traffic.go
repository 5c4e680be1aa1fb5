package db

import (
	"context"
	"database/sql"
)

// updateAddTraffic adds what a shape's front door needs (doc/traffic.md): the shape's
// traffic object (JSON, empty when absent) and, on each instance, until when it drains
// (NULL when it does not): set when the instance starts to leave, it is what a restarted
// daemon reads to continue a drain rather than cut the instance's connections. The partial
// index keeps the doorkeeper's read of the draining instances (every second) to those.
func updateAddTraffic(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments_shapes ADD COLUMN traffic TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes_instances ADD COLUMN drain_until DATETIME;
CREATE INDEX deployments_shapes_instances_drain_idx ON deployments_shapes_instances (drain_until) WHERE drain_until IS NOT NULL;
`)
	return err
}
