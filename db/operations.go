package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// Operation is an operation as recorded for the whole cluster: LXD's representation, the
// member that runs it, and who may see it.
type Operation struct {
	lxdapi.Operation
	Member       string
	Project      string
	DeploymentID int64
}

// SaveOperation records an operation's current state, creating the row on first save.
func SaveOperation(ctx context.Context, tx *sql.Tx, op Operation) error {
	resources, err := json.Marshal(op.Resources)
	if err != nil {
		return fmt.Errorf("encode operation resources: %w", err)
	}

	metadata, err := json.Marshal(op.Metadata)
	if err != nil {
		return fmt.Errorf("encode operation metadata: %w", err)
	}

	_, err = tx.ExecContext(ctx, `
INSERT INTO operations (uuid, member, description, project, deployment_id, status_code, resources, metadata, err, may_cancel, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (uuid) DO UPDATE SET status_code = excluded.status_code, metadata = excluded.metadata, err = excluded.err, may_cancel = excluded.may_cancel, updated_at = excluded.updated_at`,
		op.ID, op.Member, op.Description, op.Project, op.DeploymentID, int(op.StatusCode), string(resources), string(metadata), op.Err, op.MayCancel, op.CreatedAt.UTC(), op.UpdatedAt.UTC())
	if err != nil {
		return fmt.Errorf("record operation %s: %w", op.ID, err)
	}

	return nil
}

const operationColumns = "uuid, member, description, project, deployment_id, status_code, resources, metadata, err, may_cancel, created_at, updated_at"

func scanOperation(row interface{ Scan(...any) error }) (*Operation, error) {
	var op Operation
	var status int
	var resources, metadata string
	err := row.Scan(&op.ID, &op.Member, &op.Description, &op.Project, &op.DeploymentID, &status, &resources, &metadata, &op.Err, &op.MayCancel, &op.CreatedAt, &op.UpdatedAt)
	if err != nil {
		return nil, err
	}

	op.StatusCode = lxdapi.StatusCode(status)
	op.Status = op.StatusCode.String()
	op.Class = lxdapi.OperationClassTask
	op.Location = op.Member
	err = json.Unmarshal([]byte(resources), &op.Resources)
	if err == nil {
		err = json.Unmarshal([]byte(metadata), &op.Metadata)
	}

	if err != nil {
		return nil, fmt.Errorf("decode operation %s: %w", op.ID, err)
	}

	return &op, nil
}

// GetOperation returns the recorded operation with this id, or a 404.
func GetOperation(ctx context.Context, tx *sql.Tx, id string) (*Operation, error) {
	op, err := scanOperation(tx.QueryRowContext(ctx, "SELECT "+operationColumns+" FROM operations WHERE uuid = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "operation %q not found", id)
	}

	if err != nil {
		return nil, fmt.Errorf("read operation %s: %w", id, err)
	}

	return op, nil
}

// GetOperations returns every recorded operation, oldest first.
func GetOperations(ctx context.Context, tx *sql.Tx) ([]Operation, error) {
	return queryOperations(ctx, tx, "operations", "ORDER BY created_at, id")
}

// queryOperations reads the operations the SQL after FROM operations picks (what names them
// in the error), as scanOperation reads them.
func queryOperations(ctx context.Context, tx *sql.Tx, what string, where string, args ...any) ([]Operation, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+operationColumns+" FROM operations "+where, args...)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}

	defer func() { _ = rows.Close() }()
	ops := []Operation{}
	for rows.Next() {
		op, err := scanOperation(rows)
		if err != nil {
			return nil, err
		}

		ops = append(ops, *op)
	}

	return ops, rows.Err()
}

// DeleteOperation forgets an operation.
func DeleteOperation(ctx context.Context, tx *sql.Tx, id string) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM operations WHERE uuid = ?", id)
	if err != nil {
		return fmt.Errorf("delete operation %s: %w", id, err)
	}

	return nil
}

// FailOrphanedOperations settles the operations a member left running when it stopped
// (it crashed, or shutdown's grace ran out): they are marked failed, saying why, and
// operations finished before olderThan are dropped. Called as the member starts again.
func FailOrphanedOperations(ctx context.Context, tx *sql.Tx, member string, now time.Time, olderThan time.Time) error {
	_, err := tx.ExecContext(ctx, "UPDATE operations SET status_code = ?, err = ?, may_cancel = 0, updated_at = ? WHERE member = ? AND status_code IN (?, ?)",
		int(lxdapi.Failure), "member "+member+" stopped before this operation finished: the next reconcile round (at start, then every --reconcile-interval) finishes or undoes an interrupted launch or delete; check the operation's resources before retrying", now.UTC(), member, int(lxdapi.Running), int(lxdapi.Pending))
	if err != nil {
		return fmt.Errorf("settle operations of member %q: %w", member, err)
	}

	_, err = tx.ExecContext(ctx, "DELETE FROM operations WHERE updated_at < ? AND status_code NOT IN (?, ?)", olderThan.UTC(), int(lxdapi.Running), int(lxdapi.Pending))
	if err != nil {
		return fmt.Errorf("purge old operations: %w", err)
	}

	return nil
}

// GetUnfinishedOperations returns the operations recorded as pending or running, of every
// member, oldest first.
func GetUnfinishedOperations(ctx context.Context, tx *sql.Tx) ([]Operation, error) {
	return queryOperations(ctx, tx, "unfinished operations", "WHERE status_code IN (?, ?) ORDER BY created_at, id", int(lxdapi.Running), int(lxdapi.Pending))
}

// FailOperation marks an unfinished operation failed with message, and reports false when
// it had finished meanwhile (its member wrote its outcome first: that outcome stands).
func FailOperation(ctx context.Context, tx *sql.Tx, id string, message string, now time.Time) (bool, error) {
	result, err := tx.ExecContext(ctx, "UPDATE operations SET status_code = ?, err = ?, may_cancel = 0, updated_at = ? WHERE uuid = ? AND status_code IN (?, ?)",
		int(lxdapi.Failure), message, now.UTC(), id, int(lxdapi.Running), int(lxdapi.Pending))
	if err != nil {
		return false, fmt.Errorf("settle operation %s: %w", id, err)
	}

	n, err := result.RowsAffected()
	return n == 1, err
}
