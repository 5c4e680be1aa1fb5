package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The queries of a shape's resource_bounds. They are kept out of the shape's main SELECT
// and INSERT so that the column stays one self-contained addition.

// readResourceBounds fills in the resource_bounds of the shapes read.
func readResourceBounds(ctx context.Context, tx *sql.Tx, shapes []Shape) error {
	if len(shapes) == 0 {
		return nil
	}

	rows, err := tx.QueryContext(ctx, "SELECT id, resource_bounds FROM deployments_shapes WHERE resource_bounds != ''")
	if err != nil {
		return fmt.Errorf("read resource bounds: %w", err)
	}

	defer func() { _ = rows.Close() }()
	stored := map[int64]string{}
	for rows.Next() {
		var id int64
		var bounds string
		err = rows.Scan(&id, &bounds)
		if err != nil {
			return fmt.Errorf("read resource bounds: %w", err)
		}

		stored[id] = bounds
	}

	err = rows.Err()
	if err != nil {
		return err
	}

	for i := range shapes {
		bounds, ok := stored[shapes[i].ID]
		if !ok {
			continue
		}

		err = json.Unmarshal([]byte(bounds), &shapes[i].ResourceBounds)
		if err != nil {
			return fmt.Errorf("shape %q has corrupt resource bounds: %w", shapes[i].Name, err)
		}
	}

	return nil
}

// writeResourceBounds stores a shape's resource_bounds ("" when none).
func writeResourceBounds(ctx context.Context, tx *sql.Tx, id int64, bounds map[string]api.DeploymentShapeResourceBound) error {
	encoded := ""
	if len(bounds) > 0 {
		b, err := json.Marshal(bounds)
		if err != nil {
			return err
		}

		encoded = string(b)
	}

	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes SET resource_bounds = ? WHERE id = ?", encoded, id)
	if err != nil {
		return fmt.Errorf("update resource bounds: %w", err)
	}

	return nil
}

// SetInstanceRevisionFrom moves one instance to revision to, made from the template of
// hash templateHash, if it is still at from (a resize brought it up to date in place: it
// now runs as that template makes instances); ErrInstanceChanged when it is not.
func SetInstanceRevisionFrom(ctx context.Context, tx *sql.Tx, id int64, from int, to int, templateHash string) error {
	result, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET revision = ?, template_hash = ? WHERE id = ? AND revision = ?", to, templateHash, id, from)
	if err != nil {
		return fmt.Errorf("record instance revision: %w", err)
	}

	if expectOneRow(result) != nil {
		return ErrInstanceChanged
	}

	return nil
}
