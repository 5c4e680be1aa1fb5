package db

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Instance is a row of deployments_shapes_instances: an LXD instance that belongs to a shape.
type Instance struct {
	ID           int64
	ShapeID      int64
	DeploymentID int64
	Name         string
	State        string
	CreatedAt    time.Time
}

// InstanceFilter selects instance rows; zero fields match everything.
type InstanceFilter struct {
	DeploymentID int64
	ShapeID      int64
}

// GetInstances returns the matching instance rows, ordered by name.
func GetInstances(ctx context.Context, tx *sql.Tx, filter InstanceFilter) ([]Instance, error) {
	var where []string
	var args []any
	if filter.DeploymentID != 0 {
		where = append(where, "s.deployment_id = ?")
		args = append(args, filter.DeploymentID)
	}

	if filter.ShapeID != 0 {
		where = append(where, "i.deployment_shape_id = ?")
		args = append(args, filter.ShapeID)
	}

	query := `
SELECT i.id, i.deployment_shape_id, s.deployment_id, i.name, i.state, i.created_at
  FROM deployments_shapes_instances i
  JOIN deployments_shapes s ON s.id = i.deployment_shape_id`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}

	rows, err := tx.QueryContext(ctx, query+" ORDER BY i.name", args...)
	if err != nil {
		return nil, fmt.Errorf("read instances: %w", err)
	}

	defer func() { _ = rows.Close() }()

	instances := []Instance{}
	for rows.Next() {
		var i Instance
		err = rows.Scan(&i.ID, &i.ShapeID, &i.DeploymentID, &i.Name, &i.State, &i.CreatedAt)
		if err != nil {
			return nil, fmt.Errorf("read instances: %w", err)
		}

		instances = append(instances, i)
	}

	return instances, rows.Err()
}
