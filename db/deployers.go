package db

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// Kinds of transient instances a rollout runs.
const (
	KindDeployer = "deployer"
	KindPre      = "pre"
	KindPost     = "post"
)

// Deployer is a row of deployments_shapes_rollouts_deployers: a transient instance of a
// rollout, the deployer that carries out a custom rollout or a pre or post hook.
type Deployer struct {
	RolloutID  int64
	Kind       string
	Project    string
	Instance   string
	Operation  string
	ExitCode   *int
	Output     string
	StartedAt  time.Time
	FinishedAt *time.Time
	Deleted    bool

	// Revoked is true once the credential was cleared (the deployer ended).
	Revoked bool
}

// hashCredential is how deployer credentials are kept: a SHA-256, since they are random
// 256-bit secrets (no dictionary to guard against).
func hashCredential(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// CreateDeployer records a rollout's transient instance of a kind before it exists in LXD,
// with its credential.
func CreateDeployer(ctx context.Context, tx *sql.Tx, rolloutID int64, kind string, project string, instance string, secret string, now time.Time) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO deployments_shapes_rollouts_deployers (rollout_id, kind, project, instance, credential_hash, started_at) VALUES (?, ?, ?, ?, ?, ?)`,
		rolloutID, kind, project, instance, hashCredential(secret), now.UTC())
	if err != nil {
		return fmt.Errorf("record deployer %s: %w", instance, err)
	}

	return nil
}

const deployerColumns = `rollout_id, kind, project, instance, operation, exit_code, output, started_at, finished_at, deleted, credential_hash IS NULL`

func scanDeployer(row interface{ Scan(...any) error }) (*Deployer, error) {
	var d Deployer
	var code sql.NullInt64
	var finished sql.NullTime
	err := row.Scan(&d.RolloutID, &d.Kind, &d.Project, &d.Instance, &d.Operation, &code, &d.Output, &d.StartedAt, &finished, &d.Deleted, &d.Revoked)
	if err != nil {
		return nil, err
	}

	if code.Valid {
		c := int(code.Int64)
		d.ExitCode = &c
	}

	if finished.Valid {
		d.FinishedAt = &finished.Time
	}

	return &d, nil
}

// GetDeployer returns a rollout's transient instance of a kind, nil when it has none.
func GetDeployer(ctx context.Context, tx *sql.Tx, rolloutID int64, kind string) (*Deployer, error) {
	d, err := scanDeployer(tx.QueryRowContext(ctx, `SELECT `+deployerColumns+` FROM deployments_shapes_rollouts_deployers WHERE rollout_id = ? AND kind = ?`, rolloutID, kind))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}

	if err != nil {
		return nil, fmt.Errorf("read deployer of rollout %d: %w", rolloutID, err)
	}

	return d, nil
}

// CheckDeployerCredential returns the kind of rollout rolloutID's transient instance whose
// live credential secret is (compared in constant time), "" when none.
func CheckDeployerCredential(ctx context.Context, tx *sql.Tx, rolloutID int64, secret string) (string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT kind, credential_hash FROM deployments_shapes_rollouts_deployers WHERE rollout_id = ? AND credential_hash IS NOT NULL`, rolloutID)
	if err != nil {
		return "", err
	}

	defer func() { _ = rows.Close() }()
	want := []byte(hashCredential(secret))
	found := ""
	for rows.Next() {
		var kind, stored string
		err = rows.Scan(&kind, &stored)
		if err != nil {
			return "", err
		}

		if subtle.ConstantTimeCompare([]byte(stored), want) == 1 {
			found = kind
		}
	}

	return found, rows.Err()
}

// SetDeployerOperation records the LXD operation running the deployer's command, so that
// a restarted daemon follows it again.
func SetDeployerOperation(ctx context.Context, tx *sql.Tx, rolloutID int64, kind string, operation string) error {
	_, err := tx.ExecContext(ctx, `UPDATE deployments_shapes_rollouts_deployers SET operation = ? WHERE rollout_id = ? AND kind = ?`, operation, rolloutID, kind)
	return err
}

// EndDeployer records how a deployer ended and revokes its credential; a deployer whose end
// is recorded already is left as it is (false).
func EndDeployer(ctx context.Context, tx *sql.Tx, rolloutID int64, kind string, exitCode int, output string, now time.Time) (bool, error) {
	res, err := tx.ExecContext(ctx, `UPDATE deployments_shapes_rollouts_deployers SET exit_code = ?, output = ?, finished_at = ?, credential_hash = NULL WHERE rollout_id = ? AND kind = ? AND exit_code IS NULL`,
		exitCode, output, now.UTC(), rolloutID, kind)
	if err != nil {
		return false, fmt.Errorf("record the end of deployer of rollout %d: %w", rolloutID, err)
	}

	n, err := res.RowsAffected()
	return n == 1, err
}

// GetDeployersToDelete returns the transient instances still in LXD whose work is over:
// ended, or whose rollout is over or gone. A paused rollout's hook keeps running: the
// rollout judges its end when it resumes.
func GetDeployersToDelete(ctx context.Context, tx *sql.Tx) ([]Deployer, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT `+deployerColumns+` FROM deployments_shapes_rollouts_deployers d
 WHERE d.deleted = 0
   AND (d.exit_code IS NOT NULL
        OR NOT EXISTS (SELECT 1 FROM deployments_shapes_rollouts r WHERE r.id = d.rollout_id AND r.status IN ('running', 'paused')))`)
	if err != nil {
		return nil, fmt.Errorf("read deployers to delete: %w", err)
	}

	defer func() { _ = rows.Close() }()
	var out []Deployer
	for rows.Next() {
		d, err := scanDeployer(rows)
		if err != nil {
			return nil, err
		}

		out = append(out, *d)
	}

	return out, rows.Err()
}

// MarkDeployerDeleted records that LXD deleted a deployer (and revokes its credential, if
// its end was never recorded); the row of a rollout that is gone goes with it.
func MarkDeployerDeleted(ctx context.Context, tx *sql.Tx, rolloutID int64, kind string) error {
	_, err := tx.ExecContext(ctx, `UPDATE deployments_shapes_rollouts_deployers SET deleted = 1, credential_hash = NULL WHERE rollout_id = ? AND kind = ?`, rolloutID, kind)
	if err != nil {
		return err
	}

	_, err = tx.ExecContext(ctx, `DELETE FROM deployments_shapes_rollouts_deployers AS x WHERE x.rollout_id = ? AND x.deleted = 1 AND NOT EXISTS (SELECT 1 FROM deployments_shapes_rollouts r WHERE r.id = x.rollout_id)`, rolloutID)
	return err
}

// DeployerScope is what a deployer's credential is good for: one shape, while its rollout
// runs.
type DeployerScope struct {
	Project      string
	Deployment   string
	DeploymentID int64
	Shape        string
	Rollout      int
	Status       string
	Instance     string
	InstanceProj string
}

// GetDeployerScope returns the scope of rollout rolloutID's transient instance of a kind,
// or sql.ErrNoRows.
func GetDeployerScope(ctx context.Context, tx *sql.Tx, rolloutID int64, kind string) (*DeployerScope, error) {
	var s DeployerScope
	err := tx.QueryRowContext(ctx, `
SELECT d.project, d.name, d.id, s.name, r.number, r.status, x.instance, x.project
  FROM deployments_shapes_rollouts_deployers x
  JOIN deployments_shapes_rollouts r ON r.id = x.rollout_id
  JOIN deployments_shapes s ON s.id = r.deployment_shape_id
  JOIN deployments d ON d.id = s.deployment_id
 WHERE x.rollout_id = ? AND x.kind = ?`, rolloutID, kind).Scan(&s.Project, &s.Deployment, &s.DeploymentID, &s.Shape, &s.Rollout, &s.Status, &s.Instance, &s.InstanceProj)
	if err != nil {
		return nil, err
	}

	return &s, nil
}
