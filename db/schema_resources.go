package db

import (
	"context"
	"database/sql"
)

// updateAddResourceBounds adds a shape's resource_bounds (the range a resize may move its
// CPU and memory limits in, issue 22), as JSON; "" when the shape has none.
func updateAddResourceBounds(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `ALTER TABLE deployments_shapes ADD COLUMN resource_bounds TEXT NOT NULL DEFAULT ''`)
	return err
}
