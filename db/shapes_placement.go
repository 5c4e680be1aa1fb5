package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The placement column is read and written apart from the shape's main row so that the
// other fields' queries stay as they are (doc/placement.md).

// loadShapePlacements fills in the placement of each shape read by GetShapes.
func loadShapePlacements(ctx context.Context, tx *sql.Tx, shapes []Shape) error {
	byID := make(map[int64]*Shape, len(shapes))
	for i := range shapes {
		byID[shapes[i].ID] = &shapes[i]
	}

	rows, err := tx.QueryContext(ctx, "SELECT id, placement FROM deployments_shapes WHERE placement != ''")
	if err != nil {
		return fmt.Errorf("read shape placements: %w", err)
	}

	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id int64
		var placement string
		err = rows.Scan(&id, &placement)
		if err != nil {
			return fmt.Errorf("read shape placements: %w", err)
		}

		s := byID[id]
		if s == nil {
			continue
		}

		s.Placement = &api.DeploymentShapePlacement{}
		err = json.Unmarshal([]byte(placement), s.Placement)
		if err != nil {
			return fmt.Errorf("shape %q has a corrupt placement: %w", s.Name, err)
		}
	}

	return rows.Err()
}

// setShapePlacement stores a shape's placement (absent: empty).
func setShapePlacement(ctx context.Context, tx *sql.Tx, id int64, placement *api.DeploymentShapePlacement) error {
	value := ""
	if placement != nil {
		data, err := json.Marshal(placement)
		if err != nil {
			return err
		}

		value = string(data)
	}

	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes SET placement = ? WHERE id = ?", value, id)
	if err != nil {
		return fmt.Errorf("store shape placement: %w", err)
	}

	return nil
}

// SetInstanceLocation records the LXD member an instance runs on (or is reserved on).
func SetInstanceLocation(ctx context.Context, tx *sql.Tx, id int64, location string) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET location = ? WHERE id = ?", location, id)
	if err != nil {
		return fmt.Errorf("record instance location: %w", err)
	}

	return nil
}

// MoveInstanceLocation records that LXD has an instance on member to, if the record still
// says from: a compare-and-set, so an observation read before a newer placement does not
// undo it (ErrInstanceChanged).
func MoveInstanceLocation(ctx context.Context, tx *sql.Tx, id int64, from string, to string) error {
	result, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET location = ? WHERE id = ? AND location = ?", to, id, from)
	if err != nil {
		return fmt.Errorf("record instance location: %w", err)
	}

	return expectOneRow(result)
}

// GetShapeLocationCounts counts a shape's counted instances (see countedInstance) per LXD
// member; instances whose member is not known yet count under "". Placement reads it in
// the launch's reservation transaction, so that concurrent launches see each other's
// reserved member.
func GetShapeLocationCounts(ctx context.Context, tx *sql.Tx, shapeID int64) (map[string]int, error) {
	return locationCounts(ctx, tx, "i.deployment_shape_id = ?", shapeID)
}

// GetShapeRevisionLocationCounts is GetShapeLocationCounts over the instances made from
// one revision: a rollout spreads its new instances by themselves, so that the shape is
// spread once the old ones are gone.
func GetShapeRevisionLocationCounts(ctx context.Context, tx *sql.Tx, shapeID int64, revision int) (map[string]int, error) {
	return locationCounts(ctx, tx, "i.deployment_shape_id = ? AND i.revision = ?", shapeID, revision)
}

// locationCounts counts the counted instances that match where, per LXD member.
func locationCounts(ctx context.Context, tx *sql.Tx, where string, args ...any) (map[string]int, error) {
	rows, err := tx.QueryContext(ctx, "SELECT i.location, COUNT(*) FROM deployments_shapes_instances i WHERE "+where+" AND "+countedInstance+" GROUP BY i.location", args...)
	if err != nil {
		return nil, fmt.Errorf("count instances per member: %w", err)
	}

	defer func() { _ = rows.Close() }()
	counts := map[string]int{}
	for rows.Next() {
		var location string
		var n int
		err = rows.Scan(&location, &n)
		if err != nil {
			return nil, fmt.Errorf("count instances per member: %w", err)
		}

		counts[location] = n
	}

	return counts, rows.Err()
}

// MemberCount is how many counted instances of a shape run on one LXD member.
type MemberCount struct {
	Project    string
	Deployment string
	Shape      string
	Member     string
	Count      int
}

// GetMemberCounts counts every shape's counted instances per LXD member, for the metrics;
// instances whose member is not known yet are left out.
func GetMemberCounts(ctx context.Context, tx *sql.Tx) ([]MemberCount, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT d.project, d.name, s.name, i.location, COUNT(*)
  FROM deployments_shapes_instances i
  JOIN deployments_shapes s ON s.id = i.deployment_shape_id
  JOIN deployments d ON d.id = s.deployment_id
 WHERE i.location != '' AND `+countedInstance+`
 GROUP BY d.project, d.name, s.name, i.location
 ORDER BY d.project, d.name, s.name, i.location`)
	if err != nil {
		return nil, fmt.Errorf("count instances per member: %w", err)
	}

	defer func() { _ = rows.Close() }()
	counts := []MemberCount{}
	for rows.Next() {
		var c MemberCount
		err = rows.Scan(&c.Project, &c.Deployment, &c.Shape, &c.Member, &c.Count)
		if err != nil {
			return nil, fmt.Errorf("count instances per member: %w", err)
		}

		counts = append(counts, c)
	}

	return counts, rows.Err()
}

// GetShapeGoingByLocation counts a shape's instances on their way out (see goingInstance)
// and those being replaced, per LXD member: the launch's reservation leaves out those on
// members LXD reports offline (doc/placement.md, member loss).
func GetShapeGoingByLocation(ctx context.Context, tx *sql.Tx, shapeID int64) (going map[string]int, replacing map[string]int, err error) {
	rows, err := tx.QueryContext(ctx, "SELECT i.location, i.state, COUNT(*) FROM deployments_shapes_instances i WHERE i.deployment_shape_id = ? AND "+goingInstance+" GROUP BY i.location, i.state", shapeID)
	if err != nil {
		return nil, nil, fmt.Errorf("count going instances per member: %w", err)
	}

	defer func() { _ = rows.Close() }()
	going, replacing = map[string]int{}, map[string]int{}
	for rows.Next() {
		var location, state string
		var n int
		err = rows.Scan(&location, &state, &n)
		if err != nil {
			return nil, nil, fmt.Errorf("count going instances per member: %w", err)
		}

		going[location] += n
		if state == InstanceReplacing {
			replacing[location] += n
		}
	}

	return going, replacing, rows.Err()
}
