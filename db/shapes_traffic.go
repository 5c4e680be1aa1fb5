package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// The traffic column is read and written apart from the shape's main row, as placement
// is, so that the other fields' queries stay as they are (doc/traffic.md).

// loadShapeTraffic fills in the traffic object of each shape read by GetShapes.
func loadShapeTraffic(ctx context.Context, tx *sql.Tx, shapes []Shape) error {
	byID := make(map[int64]*Shape, len(shapes))
	for i := range shapes {
		byID[shapes[i].ID] = &shapes[i]
	}

	all, err := shapeTraffics(ctx, tx)
	if err != nil {
		return err
	}

	for id, t := range all {
		if s := byID[id]; s != nil {
			s.Traffic = t.traffic
		}
	}

	return nil
}

// shapeTraffic is one shape's stored traffic object, with the names an error quotes.
type shapeTraffic struct {
	deployment string
	shape      string
	traffic    *api.DeploymentShapeTraffic
}

// shapeTraffics reads every shape's traffic object, by shape ID.
func shapeTraffics(ctx context.Context, tx *sql.Tx) (map[int64]shapeTraffic, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT s.id, d.name, s.name, s.traffic
  FROM deployments_shapes AS s JOIN deployments AS d ON d.id = s.deployment_id
 WHERE s.traffic != ''`)
	if err != nil {
		return nil, fmt.Errorf("read shape traffic: %w", err)
	}

	defer func() { _ = rows.Close() }()
	all := map[int64]shapeTraffic{}
	for rows.Next() {
		var id int64
		var t shapeTraffic
		var value string
		err = rows.Scan(&id, &t.deployment, &t.shape, &value)
		if err != nil {
			return nil, fmt.Errorf("read shape traffic: %w", err)
		}

		t.traffic = &api.DeploymentShapeTraffic{}
		err = json.Unmarshal([]byte(value), t.traffic)
		if err != nil {
			return nil, fmt.Errorf("shape %q has a corrupt traffic object: %w", t.shape, err)
		}

		all[id] = t
	}

	return all, rows.Err()
}

// setShapeTraffic stores a shape's traffic object (absent: empty). Two shapes may not
// listen on the same address nor fill the same operator backend: the check reads the
// other shapes in the same transaction, so two concurrent writes cannot both pass.
func setShapeTraffic(ctx context.Context, tx *sql.Tx, id int64, traffic *api.DeploymentShapeTraffic) error {
	value := ""
	if traffic != nil {
		others, err := shapeTraffics(ctx, tx)
		if err != nil {
			return err
		}

		for otherID, other := range others {
			if otherID == id {
				continue
			}

			if traffic.Listen != "" && other.traffic.Listen != "" && validate.TrafficListenKey(traffic.Listen) == validate.TrafficListenKey(other.traffic.Listen) {
				return lxdapi.StatusErrorf(http.StatusConflict, "shape %s of deployment %s listens on %s already: choose another traffic.listen", other.shape, other.deployment, other.traffic.Listen)
			}

			if traffic.Backend != "" && traffic.Backend == other.traffic.Backend {
				return lxdapi.StatusErrorf(http.StatusConflict, "shape %s of deployment %s fills backend %s already: choose another traffic.backend", other.shape, other.deployment, other.traffic.Backend)
			}
		}

		data, err := json.Marshal(traffic)
		if err != nil {
			return err
		}

		value = string(data)
	}

	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes SET traffic = ? WHERE id = ?", value, id)
	if err != nil {
		return fmt.Errorf("store shape traffic: %w", err)
	}

	return nil
}

// SetInstanceDrain records until when an instance drains (nil: it does not). A restarted
// daemon reads it to continue the drain (GetInstanceDrains).
func SetInstanceDrain(ctx context.Context, tx *sql.Tx, id int64, until *time.Time) error {
	var value any
	if until != nil {
		value = until.UTC()
	}

	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET drain_until = ? WHERE id = ?", value, id)
	if err != nil {
		return fmt.Errorf("record instance drain: %w", err)
	}

	return nil
}

// GetInstanceDrains returns until when each draining instance drains, by instance ID.
func GetInstanceDrains(ctx context.Context, tx *sql.Tx) (map[int64]time.Time, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, drain_until FROM deployments_shapes_instances WHERE drain_until IS NOT NULL")
	if err != nil {
		return nil, fmt.Errorf("read instance drains: %w", err)
	}

	defer func() { _ = rows.Close() }()
	drains := map[int64]time.Time{}
	for rows.Next() {
		var id int64
		var until time.Time
		err = rows.Scan(&id, &until)
		if err != nil {
			return nil, fmt.Errorf("read instance drains: %w", err)
		}

		drains[id] = until
	}

	return drains, rows.Err()
}

// GetInstanceDrain returns until when one instance drains, nil when it does not.
func GetInstanceDrain(ctx context.Context, tx *sql.Tx, id int64) (*time.Time, error) {
	var until sql.NullTime
	err := tx.QueryRowContext(ctx, "SELECT drain_until FROM deployments_shapes_instances WHERE id = ?", id).Scan(&until)
	if err != nil {
		return nil, fmt.Errorf("read instance drain: %w", err)
	}

	if !until.Valid {
		return nil, nil
	}

	return &until.Time, nil
}

// CountShapesWithTraffic counts the shapes that have a traffic object: a doorkeeper round
// at rest (none) reads nothing else.
func CountShapesWithTraffic(ctx context.Context, tx *sql.Tx) (int, error) {
	var n int
	err := tx.QueryRowContext(ctx, "SELECT count(*) FROM deployments_shapes WHERE traffic != ''").Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count shapes with traffic: %w", err)
	}

	return n, nil
}
