package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// Instance states recorded by lxd-deployd (LXD's own status is read live): the states of
// shared/rules, named here for the queries and their callers.
const (
	// InstanceCreating: the row is reserved and the LXD instance is being made.
	InstanceCreating = rules.Creating

	// InstanceCreated: the LXD instance exists.
	InstanceCreated = rules.Created

	// InstanceDeleting: the LXD instance is being deleted; it no longer counts.
	InstanceDeleting = rules.Deleting

	// InstanceMissing: reconcile found the LXD instance gone.
	InstanceMissing = rules.Missing
)

// Instance is a row of deployments_shapes_instances: an LXD instance that belongs to a shape.
type Instance struct {
	ID           int64
	ShapeID      int64
	DeploymentID int64
	Project      string
	Deployment   string
	Shape        string
	Name         string
	State        string
	TemplateHash string
	CreatedAt    time.Time

	// Revision is the shape revision the instance was made from.
	Revision int

	// GovernorSocket is true when the instance was made with a governor socket.
	GovernorSocket bool

	// SizesRollout is true when the launch's reservation moved the size of a running
	// rollout of the shape (every launch but a rollout's own and an autohealing
	// replacement): dropping a launch that never finished moves it back.
	SizesRollout bool

	// Owner is the daemon that last changed the record, and StateChangedAt when.
	Owner          string
	StateChangedAt time.Time

	// Health is the last health check verdict, Hook the lifecycle hook it waits in.
	Health InstanceHealth
	Hook   InstanceHook

	// Location is the LXD cluster member the instance runs on, empty until LXD says (and
	// outside a cluster).
	Location string
}

// InstanceFilter selects instance rows; zero fields match everything.
type InstanceFilter struct {
	DeploymentID int64
	ShapeID      int64
	Name         string
	State        string
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

	if filter.Name != "" {
		where = append(where, "i.name = ?")
		args = append(args, filter.Name)
	}

	if filter.State != "" {
		where = append(where, "i.state = ?")
		args = append(args, filter.State)
	}

	return queryInstances(ctx, tx, where, args)
}

// queryInstances reads the instance rows matching every condition of where (on i, s, d),
// ordered by name: the one place that turns a row into an Instance.
func queryInstances(ctx context.Context, tx *sql.Tx, where []string, args []any) ([]Instance, error) {
	query := `
SELECT i.id, i.deployment_shape_id, s.deployment_id, d.project, d.name, s.name, i.name, i.state, i.template_hash, i.created_at, i.governor_socket, i.owner, i.state_changed_at, i.revision,
       i.health, i.health_output, i.health_checked_at, i.health_streak, i.replacement, i.hook, i.hook_deadline, i.hook_action, i.sizes_rollout, i.health_exit_code, i.location,
       i.health_stale, i.health_cannot_start
  FROM deployments_shapes_instances i
  JOIN deployments_shapes s ON s.id = i.deployment_shape_id
  JOIN deployments d ON d.id = s.deployment_id`
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
		var changed, checked, deadline sql.NullTime
		err = rows.Scan(&i.ID, &i.ShapeID, &i.DeploymentID, &i.Project, &i.Deployment, &i.Shape, &i.Name, &i.State, &i.TemplateHash, &i.CreatedAt, &i.GovernorSocket, &i.Owner, &changed, &i.Revision,
			&i.Health.Status, &i.Health.Output, &checked, &i.Health.Streak, &i.Health.Replacement, &i.Hook.Hook, &deadline, &i.Hook.Action, &i.SizesRollout, &i.Health.ExitCode, &i.Location,
			&i.Health.Stale, &i.Health.CannotStart)
		if err != nil {
			return nil, fmt.Errorf("read instances: %w", err)
		}

		if checked.Valid {
			i.Health.CheckedAt = &checked.Time
		}

		if deadline.Valid {
			i.Hook.Deadline = &deadline.Time
		}

		i.StateChangedAt = i.CreatedAt
		if changed.Valid {
			i.StateChangedAt = changed.Time
		}

		instances = append(instances, i)
	}

	return instances, rows.Err()
}

// GetInstance returns one instance of a shape, or a 404 that names it.
func GetInstance(ctx context.Context, tx *sql.Tx, shapeID int64, name string) (*Instance, error) {
	instances, err := GetInstances(ctx, tx, InstanceFilter{ShapeID: shapeID, Name: name})
	if err != nil {
		return nil, err
	}

	if len(instances) == 0 {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "instance %q not found in the shape", name)
	}

	return &instances[0], nil
}

// CreateInstance reserves a row for an instance about to be made in LXD. Instance names
// are unique within an LXD project, so a name any deployment of the project uses is a 409.
func CreateInstance(ctx context.Context, tx *sql.Tx, project string, shapeID int64, name string, templateHash string, revision int, owner string, now time.Time) (int64, error) {
	var user string
	err := tx.QueryRowContext(ctx, `
SELECT d.name || '/' || s.name
  FROM deployments_shapes_instances i
  JOIN deployments_shapes s ON s.id = i.deployment_shape_id
  JOIN deployments d ON d.id = s.deployment_id
 WHERE i.name = ? AND d.project = ?`, name, project).Scan(&user)
	if err == nil {
		return 0, lxdapi.StatusErrorf(http.StatusConflict, "instance name %q is already used by shape %s in project %q: pick another name", name, user, project)
	}

	if !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("check instance name: %w", err)
	}

	result, err := tx.ExecContext(ctx, "INSERT INTO deployments_shapes_instances (deployment_shape_id, name, state, template_hash, revision, owner, created_at, state_changed_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		shapeID, name, InstanceCreating, templateHash, revision, owner, now.UTC(), now.UTC())
	if err != nil {
		return 0, fmt.Errorf("reserve instance: %w", err)
	}

	return result.LastInsertId()
}

// SetInstanceKeepsRolloutSize records that a launch did not move a running rollout's size
// (a rollout's own launch, an autohealing replacement): a reservation records every other
// launch as moving it (the column's default), so the governor's launches pay no write.
func SetInstanceKeepsRolloutSize(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET sizes_rollout = 0 WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("record launch kind: %w", err)
	}

	return nil
}

// SetInstanceGovernorSocket records that an instance gets a governor socket.
func SetInstanceGovernorSocket(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET governor_socket = 1 WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("record governor socket: %w", err)
	}

	return nil
}

// ErrInstanceChanged says an instance record was not in the state a change expected:
// another daemon (or this one's reconcile) changed or removed it meanwhile.
var ErrInstanceChanged = lxdapi.StatusErrorf(http.StatusConflict, "the instance record changed meanwhile")

// SetInstanceState moves an instance record from one state to another, as owner. It is a
// compare-and-set: a record no longer in state from is left alone (ErrInstanceChanged).
func SetInstanceState(ctx context.Context, tx *sql.Tx, id int64, from string, to string, owner string, now time.Time) error {
	result, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET state = ?, owner = ?, state_changed_at = ? WHERE id = ? AND state = ?", to, owner, now.UTC(), id, from)
	if err != nil {
		return fmt.Errorf("set instance state: %w", err)
	}

	return expectOneRow(result)
}

// DeleteInstance removes an instance record that is still in state (ErrInstanceChanged
// otherwise).
func DeleteInstance(ctx context.Context, tx *sql.Tx, id int64, state string) error {
	result, err := tx.ExecContext(ctx, "DELETE FROM deployments_shapes_instances WHERE id = ? AND state = ?", id, state)
	if err != nil {
		return fmt.Errorf("delete instance: %w", err)
	}

	return expectOneRow(result)
}

func expectOneRow(result sql.Result) error {
	n, err := result.RowsAffected()
	if err != nil {
		return err
	}

	if n != 1 {
		return ErrInstanceChanged
	}

	return nil
}

// GetProjects returns the LXD projects that have deployments.
func GetProjects(ctx context.Context, tx *sql.Tx) ([]string, error) {
	return queryStrings(ctx, tx, "SELECT DISTINCT project FROM deployments ORDER BY project")
}

// SetInstancesRevision moves a shape's instances from one revision to another that makes
// the same instances.
func SetInstancesRevision(ctx context.Context, tx *sql.Tx, shapeID int64, from int, to int) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET revision = ? WHERE deployment_shape_id = ? AND revision = ?", to, shapeID, from)
	if err != nil {
		return fmt.Errorf("relabel instances: %w", err)
	}

	return nil
}
