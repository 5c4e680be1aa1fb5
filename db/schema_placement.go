package db

import (
	"context"
	"database/sql"
)

// updateAddPlacement adds what shapes across an LXD cluster keep (doc/placement.md): a
// shape's placement object (JSON, empty when absent) and, on each instance, the LXD member
// it runs on (empty until LXD says, and outside a cluster). The index serves the counts
// per member that placement decisions make inside the launch's transaction.
func updateAddPlacement(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments_shapes ADD COLUMN placement TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes_instances ADD COLUMN location TEXT NOT NULL DEFAULT '';
CREATE INDEX deployments_shapes_instances_location_idx ON deployments_shapes_instances (deployment_shape_id, location);
`)
	return err
}
