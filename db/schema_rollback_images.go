package db

import (
	"context"
	"database/sql"
)

// updateAddRevisionImages adds what makes a rollback go back to the exact image
// (doc/rollouts.md#rollback, issue 33):
//   - deployments_shapes_revisions.image_fingerprint: the image the template's alias
//     resolved to for that revision (empty when not known: older revisions, shapes whose
//     alias no image trigger watches).
//   - deployments_shapes.triggers_suspended, deployments.triggers_suspended: JSON of who
//     suspended the shape's (or every shape's) automatic triggers, when and why; empty
//     when they are not suspended.
func updateAddRevisionImages(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments_shapes_revisions ADD COLUMN image_fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes ADD COLUMN triggers_suspended TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments ADD COLUMN triggers_suspended TEXT NOT NULL DEFAULT '';
`)
	return err
}
