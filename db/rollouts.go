package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Rollout is a row of deployments_shapes_rollouts.
type Rollout struct {
	ID           int64
	ShapeID      int64
	DeploymentID int64
	Project      string
	Deployment   string
	api.DeploymentRollout

	// Promoted is true once a canary rollout was promoted.
	Promoted bool

	// ProgressAt is when the rollout last made progress, for its deadline.
	ProgressAt time.Time

	// ClaimedBy is the daemon working on the rollout until ClaimedUntil.
	ClaimedBy    string
	ClaimedUntil time.Time
}

// RolloutFilter selects rollouts; zero fields match everything.
type RolloutFilter struct {
	ShapeID int64
	Number  int

	// Active selects running and paused rollouts only.
	Active bool
}

// GetRollouts returns the matching rollouts, newest first.
func GetRollouts(ctx context.Context, tx *sql.Tx, filter RolloutFilter) ([]Rollout, error) {
	var where []string
	var args []any
	if filter.ShapeID != 0 {
		where = append(where, "r.deployment_shape_id = ?")
		args = append(args, filter.ShapeID)
	}

	if filter.Number != 0 {
		where = append(where, "r.number = ?")
		args = append(args, filter.Number)
	}

	if filter.Active {
		where = append(where, "r.status IN ('running', 'paused')")
	}

	query := `
SELECT r.id, r.deployment_shape_id, s.deployment_id, d.project, d.name, s.name, r.number, r.status, r.phase, r.reason,
       r.revision, r.from_revision, r.strategy, r.cause, r.requestor, r.notes, r.size, r.promoted,
       r.progress_at, r.created_at, r.updated_at, r.finished_at, r.claimed_by, r.claimed_until
  FROM deployments_shapes_rollouts r
  JOIN deployments_shapes s ON s.id = r.deployment_shape_id
  JOIN deployments d ON d.id = s.deployment_id`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}

	rows, err := tx.QueryContext(ctx, query+" ORDER BY r.deployment_shape_id, r.number DESC", args...)
	if err != nil {
		return nil, fmt.Errorf("read rollouts: %w", err)
	}

	defer func() { _ = rows.Close() }()
	rollouts := []Rollout{}
	for rows.Next() {
		var r Rollout
		var strategy, requestor string
		var finished, claimed sql.NullTime
		err = rows.Scan(&r.ID, &r.ShapeID, &r.DeploymentID, &r.Project, &r.Deployment, &r.Shape, &r.Number, &r.Status, &r.Phase, &r.Reason,
			&r.Revision, &r.FromRevision, &strategy, &r.Cause, &requestor, &r.Notes, &r.Size, &r.Promoted,
			&r.ProgressAt, &r.CreatedAt, &r.UpdatedAt, &finished, &r.ClaimedBy, &claimed)
		if err != nil {
			return nil, fmt.Errorf("read rollouts: %w", err)
		}

		_ = json.Unmarshal([]byte(strategy), &r.Strategy)
		_ = json.Unmarshal([]byte(requestor), &r.Requestor)
		if finished.Valid {
			t := finished.Time
			r.FinishedAt = &t
		}

		if claimed.Valid {
			r.ClaimedUntil = claimed.Time
		}

		rollouts = append(rollouts, r)
	}

	return rollouts, rows.Err()
}

// GetRollout returns one rollout of a shape, or a 404.
func GetRollout(ctx context.Context, tx *sql.Tx, shapeID int64, number int) (*Rollout, error) {
	rollouts, err := GetRollouts(ctx, tx, RolloutFilter{ShapeID: shapeID, Number: number})
	if err != nil {
		return nil, err
	}

	if len(rollouts) == 0 {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "rollout %d of the shape not found", number)
	}

	return &rollouts[0], nil
}

// GetActiveRollout returns the running or paused rollout of a shape, or nil.
func GetActiveRollout(ctx context.Context, tx *sql.Tx, shapeID int64) (*Rollout, error) {
	rollouts, err := GetRollouts(ctx, tx, RolloutFilter{ShapeID: shapeID, Active: true})
	if err != nil || len(rollouts) == 0 {
		return nil, err
	}

	return &rollouts[0], nil
}

// CreateRollout records a new running rollout of a shape and returns its number, and
// prunes the shape's finished rollouts beyond its deployment's rollouts.keep.
func CreateRollout(ctx context.Context, tx *sql.Tx, shapeID int64, r api.DeploymentRollout, now time.Time) (int, error) {
	var number int
	err := tx.QueryRowContext(ctx, "SELECT COALESCE(MAX(number), 0) + 1 FROM deployments_shapes_rollouts WHERE deployment_shape_id = ?", shapeID).Scan(&number)
	if err != nil {
		return 0, fmt.Errorf("number rollout: %w", err)
	}

	strategy, err := json.Marshal(r.Strategy)
	if err != nil {
		return 0, err
	}

	requestor, err := json.Marshal(r.Requestor)
	if err != nil {
		return 0, err
	}

	_, err = tx.ExecContext(ctx, `
INSERT INTO deployments_shapes_rollouts (deployment_shape_id, number, status, phase, revision, from_revision, strategy, cause, requestor, notes, size, progress_at, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		shapeID, number, r.Status, r.Phase, r.Revision, r.FromRevision, string(strategy), r.Cause, string(requestor), r.Notes, r.Size, now.UTC(), now.UTC(), now.UTC())
	if err != nil {
		return 0, fmt.Errorf("record rollout: %w", err)
	}

	// Pruned in the transaction that adds one, so the count never grows past the bound.
	keep, err := rolloutsKeep(ctx, tx, shapeID)
	if err != nil {
		return 0, err
	}

	err = PruneRollouts(ctx, tx, shapeID, keep)
	if err != nil {
		return 0, err
	}

	return number, nil
}

// RolloutUpdate is what a step of a rollout changes; nil fields stay.
type RolloutUpdate struct {
	Status   *string
	Phase    *string
	Reason   *string
	Revision *int
	Promoted *bool
	Progress bool
}

// ErrRolloutChanged says a rollout was not in the status a change expected: someone paused,
// cancelled or finished it meanwhile.
var ErrRolloutChanged = lxdapi.StatusErrorf(http.StatusConflict, "the rollout changed meanwhile: read it again")

// UpdateRollout changes a rollout that is still in status from (ErrRolloutChanged
// otherwise).
func UpdateRollout(ctx context.Context, tx *sql.Tx, id int64, from string, u RolloutUpdate, now time.Time) error {
	sets := []string{"updated_at = ?"}
	args := []any{now.UTC()}
	if u.Status != nil {
		sets = append(sets, "status = ?")
		args = append(args, *u.Status)
		if *u.Status != api.RolloutRunning && *u.Status != api.RolloutPaused {
			sets = append(sets, "finished_at = ?", "claimed_by = ''")
			args = append(args, now.UTC())
		}
	}

	if u.Phase != nil {
		sets = append(sets, "phase = ?")
		args = append(args, *u.Phase)
	}

	if u.Reason != nil {
		sets = append(sets, "reason = ?")
		args = append(args, *u.Reason)
	}

	if u.Revision != nil {
		sets = append(sets, "revision = ?")
		args = append(args, *u.Revision)
	}

	if u.Promoted != nil {
		sets = append(sets, "promoted = ?")
		args = append(args, *u.Promoted)
	}

	if u.Progress {
		sets = append(sets, "progress_at = ?")
		args = append(args, now.UTC())
	}

	args = append(args, id, from)
	result, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_rollouts SET "+strings.Join(sets, ", ")+" WHERE id = ? AND status = ?", args...)
	if err != nil {
		return fmt.Errorf("update rollout: %w", err)
	}

	if expectOneRow(result) != nil {
		return ErrRolloutChanged
	}

	return nil
}

// ClaimRollout makes owner the daemon working on an active rollout until until, unless
// another daemon holds an unexpired claim. It reports whether owner holds it.
func ClaimRollout(ctx context.Context, tx *sql.Tx, id int64, owner string, until time.Time, now time.Time) (bool, error) {
	result, err := tx.ExecContext(ctx, `
UPDATE deployments_shapes_rollouts SET claimed_by = ?, claimed_until = ?
 WHERE id = ? AND status IN ('running', 'paused') AND (claimed_by = '' OR claimed_by = ? OR claimed_until IS NULL OR claimed_until < ?)`,
		owner, until.UTC(), id, owner, now.UTC())
	if err != nil {
		return false, fmt.Errorf("claim rollout: %w", err)
	}

	n, err := result.RowsAffected()
	return n == 1, err
}

// ErrRolloutClaimLost says this daemon no longer holds a rollout's claim: it expired (the
// daemon stalled past its TTL) and another daemon took the rollout over, or it ended.
var ErrRolloutClaimLost = lxdapi.StatusErrorf(http.StatusConflict, "another member works on this rollout now")

// HoldRolloutClaim checks, in the transaction of a write made for a rollout, that owner
// still holds the rollout's unexpired claim, and extends it to until; otherwise it returns
// ErrRolloutClaimLost and the caller's transaction must not commit (fencing: a daemon that
// stalled past its claim cannot act on a rollout another daemon has taken over).
func HoldRolloutClaim(ctx context.Context, tx *sql.Tx, id int64, owner string, until time.Time, now time.Time) error {
	result, err := tx.ExecContext(ctx, `
UPDATE deployments_shapes_rollouts SET claimed_until = ?
 WHERE id = ? AND status IN ('running', 'paused') AND claimed_by = ? AND claimed_until >= ?`,
		until.UTC(), id, owner, now.UTC())
	if err != nil {
		return fmt.Errorf("hold rollout claim: %w", err)
	}

	n, err := result.RowsAffected()
	if err != nil {
		return fmt.Errorf("hold rollout claim: %w", err)
	}

	if n != 1 {
		return ErrRolloutClaimLost
	}

	return nil
}

// AdjustRolloutSize moves the size an active rollout of a shape keeps by delta: the
// governor's launches and deletes during a rollout change the size it works toward.
func AdjustRolloutSize(ctx context.Context, tx *sql.Tx, shapeID int64, delta int) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_rollouts SET size = MAX(0, size + ?) WHERE deployment_shape_id = ? AND status IN ('running', 'paused')", delta, shapeID)
	if err != nil {
		return fmt.Errorf("adjust rollout size: %w", err)
	}

	return nil
}

// GetLastCompleteRevision returns the revision of a shape's newest complete rollout, or 0.
func GetLastCompleteRevision(ctx context.Context, tx *sql.Tx, shapeID int64) (int, error) {
	var revision int
	err := tx.QueryRowContext(ctx, "SELECT revision FROM deployments_shapes_rollouts WHERE deployment_shape_id = ? AND status = 'complete' ORDER BY number DESC LIMIT 1", shapeID).Scan(&revision)
	if err == sql.ErrNoRows {
		return 0, nil
	}

	return revision, err
}
