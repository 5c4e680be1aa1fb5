package db

import (
	"context"
	"database/sql"
	"fmt"
)

// configTable names a key/value table and the column pointing at its owner. Only the
// constants below are ever used, so building SQL from them is safe.
type configTable struct {
	table  string
	column string
}

var (
	deploymentsConfig = configTable{table: "deployments_config", column: "deployment_id"}
	shapesConfig      = configTable{table: "deployments_shapes_config", column: "deployment_shape_id"}
)

// getConfigs loads the config of every owner, keyed by owner id, in one query.
func getConfigs(ctx context.Context, tx *sql.Tx, t configTable) (map[int64]map[string]string, error) {
	rows, err := tx.QueryContext(ctx, fmt.Sprintf("SELECT %s, key, value FROM %s", t.column, t.table))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", t.table, err)
	}

	defer func() { _ = rows.Close() }()

	configs := map[int64]map[string]string{}
	for rows.Next() {
		var owner int64
		var key, value string
		err = rows.Scan(&owner, &key, &value)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", t.table, err)
		}

		if configs[owner] == nil {
			configs[owner] = map[string]string{}
		}

		configs[owner][key] = value
	}

	return configs, rows.Err()
}

// replaceConfig sets the owner's config to exactly config.
func replaceConfig(ctx context.Context, tx *sql.Tx, t configTable, owner int64, config map[string]string) error {
	_, err := tx.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE %s = ?", t.table, t.column), owner)
	if err != nil {
		return fmt.Errorf("clear %s: %w", t.table, err)
	}

	for key, value := range config {
		_, err = tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (%s, key, value) VALUES (?, ?, ?)", t.table, t.column), owner, key, value)
		if err != nil {
			return fmt.Errorf("write %s: %w", t.table, err)
		}
	}

	return nil
}
