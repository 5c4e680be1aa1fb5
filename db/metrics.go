package db

import (
	"context"
	"database/sql"
	"fmt"
)

// ShapeCount is a shape's size against its bounds, for the metrics gauges.
type ShapeCount struct {
	Project    string
	Deployment string
	Shape      string
	Current    int
	Minimum    int
	Maximum    int
}

// DeliveryCount is how many of a deployment's webhook deliveries are in one status.
type DeliveryCount struct {
	Project    string
	Deployment string
	Status     string
	Count      int
}

// GetShapeCounts returns every shape's size and bounds in one query: a scrape of many shapes
// costs one round trip, not one per shape.
func GetShapeCounts(ctx context.Context, tx *sql.Tx) ([]ShapeCount, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT d.project, d.name, s.name, s.scaling_minimum, s.scaling_maximum, COUNT(i.id)
  FROM deployments_shapes s
  JOIN deployments d ON d.id = s.deployment_id
  LEFT JOIN deployments_shapes_instances i ON i.deployment_shape_id = s.id AND `+countedInstance+`
 GROUP BY s.id
 ORDER BY d.project, d.name, s.name`)
	if err != nil {
		return nil, fmt.Errorf("count shape instances: %w", err)
	}

	defer func() { _ = rows.Close() }()
	counts := []ShapeCount{}
	for rows.Next() {
		var c ShapeCount
		err = rows.Scan(&c.Project, &c.Deployment, &c.Shape, &c.Minimum, &c.Maximum, &c.Current)
		if err != nil {
			return nil, fmt.Errorf("count shape instances: %w", err)
		}

		counts = append(counts, c)
	}

	return counts, rows.Err()
}

// GetDeliveryCounts returns how many webhook deliveries each deployment has in each status.
func GetDeliveryCounts(ctx context.Context, tx *sql.Tx) ([]DeliveryCount, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT d.project, d.name, w.status, COUNT(*)
  FROM webhook_deliveries w
  JOIN deployments d ON d.id = w.deployment_id
 GROUP BY w.deployment_id, w.status`)
	if err != nil {
		return nil, fmt.Errorf("count webhook deliveries: %w", err)
	}

	defer func() { _ = rows.Close() }()
	counts := []DeliveryCount{}
	for rows.Next() {
		var c DeliveryCount
		err = rows.Scan(&c.Project, &c.Deployment, &c.Status, &c.Count)
		if err != nil {
			return nil, fmt.Errorf("count webhook deliveries: %w", err)
		}

		counts = append(counts, c)
	}

	return counts, rows.Err()
}
