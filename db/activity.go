package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ActivityAdmin is the activity log's who of an admin's entries (fleet.ActivityWho).
const ActivityAdmin = "admin"

// CreateActivity appends an entry to a deployment's activity log and drops the oldest
// beyond keep, in the caller's transaction: the entry commits with the change it records.
// An admin's entries and all others (governors' and the daemon's own, which governors set
// off too: launches, resizes, autoheals) are counted separately, keep of each, so a busy
// governor never pushes what admins did out of the log (issue 32).
func CreateActivity(ctx context.Context, tx *sql.Tx, deploymentID int64, entry api.DeploymentActivity, keep int) error {
	requestor, err := json.Marshal(entry.Requestor)
	if err != nil {
		return err
	}

	_, err = tx.ExecContext(ctx, "INSERT INTO deployments_activity (deployment_id, shape, action, from_size, to_size, who, requestor, why, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
		deploymentID, entry.Shape, entry.Action, entry.From, entry.To, entry.Who, string(requestor), entry.Why, entry.Time.UTC())
	if err != nil {
		return fmt.Errorf("record activity: %w", err)
	}

	admin := entry.Who == ActivityAdmin
	_, err = tx.ExecContext(ctx, `
DELETE FROM deployments_activity
 WHERE deployment_id = ? AND (who = ?) = ?
   AND id <= (SELECT id FROM deployments_activity WHERE deployment_id = ? AND (who = ?) = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
		deploymentID, ActivityAdmin, admin, deploymentID, ActivityAdmin, admin, keep)
	if err != nil {
		return fmt.Errorf("prune activity: %w", err)
	}

	return nil
}

// ActivityFilter selects activity entries of one deployment.
type ActivityFilter struct {
	DeploymentID int64

	// Since returns only entries with a larger id.
	Since int64

	// Shape returns only the entries of one shape.
	Shape string
}

// GetActivity returns a deployment's activity entries, oldest first.
func GetActivity(ctx context.Context, tx *sql.Tx, filter ActivityFilter) ([]api.DeploymentActivity, error) {
	query := "SELECT id, created_at, shape, action, from_size, to_size, who, requestor, why FROM deployments_activity WHERE deployment_id = ? AND id > ?"
	args := []any{filter.DeploymentID, filter.Since}
	if filter.Shape != "" {
		query += " AND shape = ?"
		args = append(args, filter.Shape)
	}

	rows, err := tx.QueryContext(ctx, query+" ORDER BY id", args...)
	if err != nil {
		return nil, fmt.Errorf("read activity: %w", err)
	}

	defer func() { _ = rows.Close() }()
	entries := []api.DeploymentActivity{}
	for rows.Next() {
		var e api.DeploymentActivity
		var requestor string
		err = rows.Scan(&e.ID, &e.Time, &e.Shape, &e.Action, &e.From, &e.To, &e.Who, &requestor, &e.Why)
		if err != nil {
			return nil, fmt.Errorf("read activity: %w", err)
		}

		_ = json.Unmarshal([]byte(requestor), &e.Requestor)
		entries = append(entries, e)
	}

	return entries, rows.Err()
}

// GetDeploymentConfigValue returns one config key of a deployment ("" when unset).
func GetDeploymentConfigValue(ctx context.Context, tx *sql.Tx, deploymentID int64, key string) (string, error) {
	var value string
	err := tx.QueryRowContext(ctx, "SELECT value FROM deployments_config WHERE deployment_id = ? AND key = ?", deploymentID, key).Scan(&value)
	if err == sql.ErrNoRows {
		return "", nil
	}

	if err != nil {
		return "", fmt.Errorf("read deployment config: %w", err)
	}

	return value, nil
}
