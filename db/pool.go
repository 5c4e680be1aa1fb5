package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Warm pool instance states.
const (
	// PoolCreating: the row is reserved and the LXD instance is being made (stopped).
	PoolCreating = "creating"

	// PoolReady: the LXD instance exists, stopped, and a launch may take it.
	PoolReady = "ready"

	// PoolTaking: a launch is turning it into an instance of the shape; the row goes once
	// that is done. Until then the pool's sweep knows the LXD instance is spoken for.
	PoolTaking = "taking"
)

// PoolInstance is a warm pool instance of a shape: made in LXD, stopped, not an instance of
// the shape until a launch takes it.
type PoolInstance struct {
	ID           int64
	ShapeID      int64
	Project      string
	Deployment   string
	Shape        string
	Name         string
	TemplateHash string
	State        string
	Owner        string
	CreatedAt    time.Time

	// StateChangedAt is when Owner last changed the state.
	StateChangedAt time.Time
}

// GetPoolInstances returns the warm pool instances of a shape, or of every shape (shapeID 0).
func GetPoolInstances(ctx context.Context, tx *sql.Tx, shapeID int64) ([]PoolInstance, error) {
	query := `
SELECT p.id, p.deployment_shape_id, d.project, d.name, s.name, p.name, p.template_hash, p.state, p.owner, p.created_at, p.state_changed_at
  FROM deployments_shapes_pool p
  JOIN deployments_shapes s ON s.id = p.deployment_shape_id
  JOIN deployments d ON d.id = s.deployment_id`
	var args []any
	if shapeID != 0 {
		query += " WHERE p.deployment_shape_id = ?"
		args = append(args, shapeID)
	}

	rows, err := tx.QueryContext(ctx, query+" ORDER BY p.name", args...)
	if err != nil {
		return nil, fmt.Errorf("read warm pool: %w", err)
	}

	defer func() { _ = rows.Close() }()
	pool := []PoolInstance{}
	for rows.Next() {
		var p PoolInstance
		err = rows.Scan(&p.ID, &p.ShapeID, &p.Project, &p.Deployment, &p.Shape, &p.Name, &p.TemplateHash, &p.State, &p.Owner, &p.CreatedAt, &p.StateChangedAt)
		if err != nil {
			return nil, fmt.Errorf("read warm pool: %w", err)
		}

		pool = append(pool, p)
	}

	return pool, rows.Err()
}

// CreatePoolInstance reserves a warm pool row for an instance about to be made.
func CreatePoolInstance(ctx context.Context, tx *sql.Tx, shapeID int64, name string, templateHash string, owner string, now time.Time) (int64, error) {
	result, err := tx.ExecContext(ctx, "INSERT INTO deployments_shapes_pool (deployment_shape_id, name, template_hash, state, owner, created_at, state_changed_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
		shapeID, name, templateHash, PoolCreating, owner, now.UTC(), now.UTC())
	if err != nil {
		return 0, fmt.Errorf("reserve warm pool instance: %w", err)
	}

	return result.LastInsertId()
}

// SetPoolInstanceReady marks a reserved pool instance as made.
func SetPoolInstanceReady(ctx context.Context, tx *sql.Tx, id int64) error {
	result, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_pool SET state = ?, state_changed_at = ? WHERE id = ? AND state = ?", PoolReady, time.Now().UTC(), id, PoolCreating)
	if err != nil {
		return fmt.Errorf("mark warm pool instance ready: %w", err)
	}

	return expectOneRow(result)
}

// DeletePoolInstance removes a pool row still in state (ErrInstanceChanged otherwise).
func DeletePoolInstance(ctx context.Context, tx *sql.Tx, id int64, state string) error {
	result, err := tx.ExecContext(ctx, "DELETE FROM deployments_shapes_pool WHERE id = ? AND state = ?", id, state)
	if err != nil {
		return fmt.Errorf("remove warm pool instance: %w", err)
	}

	return expectOneRow(result)
}

// ClaimPoolInstance moves a pool row from state from to taking, for owner: whoever claims
// it (a launch, or the pool removing it) is the only one to touch its instance.
func ClaimPoolInstance(ctx context.Context, tx *sql.Tx, id int64, from string, owner string, now time.Time) error {
	result, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_pool SET state = ?, owner = ?, state_changed_at = ? WHERE id = ? AND state = ?", PoolTaking, owner, now.UTC(), id, from)
	if err != nil {
		return fmt.Errorf("claim warm pool instance: %w", err)
	}

	return expectOneRow(result)
}

// TakePoolInstance claims a ready pool instance of the shape made from the given template
// for owner (state taking), or returns nil when there is none: an outdated one is never
// used. The caller removes the row once the instance is the launch's.
func TakePoolInstance(ctx context.Context, tx *sql.Tx, shapeID int64, templateHash string, owner string, now time.Time) (*PoolInstance, error) {
	var p PoolInstance
	err := tx.QueryRowContext(ctx, "SELECT id, name, template_hash, created_at FROM deployments_shapes_pool WHERE deployment_shape_id = ? AND state = ? AND template_hash = ? ORDER BY id LIMIT 1",
		shapeID, PoolReady, templateHash).Scan(&p.ID, &p.Name, &p.TemplateHash, &p.CreatedAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}

	if err != nil {
		return nil, fmt.Errorf("take warm pool instance: %w", err)
	}

	err = ClaimPoolInstance(ctx, tx, p.ID, PoolReady, owner, now)
	if err != nil {
		return nil, err
	}

	p.ShapeID, p.State, p.Owner, p.StateChangedAt = shapeID, PoolTaking, owner, now.UTC()
	return &p, nil
}
