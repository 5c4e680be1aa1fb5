package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// GovernorHold is a deployments_governors row: who governs a deployment, since when and
// until when (see updateAddGovernorHolds).
type GovernorHold struct {
	DeploymentID int64
	Fingerprint  string
	KeyName      string
	Governor     string
	Since        time.Time
	RenewedAt    time.Time
	ExpiresAt    time.Time
}

// GetGovernorHold returns the deployment's hold row, nil when there is none. An expired
// row is returned too: the caller decides with its clock (GovernorHold.ActiveAt).
func GetGovernorHold(ctx context.Context, tx *sql.Tx, deploymentID int64) (*GovernorHold, error) {
	h := GovernorHold{DeploymentID: deploymentID}
	err := tx.QueryRowContext(ctx, "SELECT fingerprint, key_name, governor, since, renewed_at, expires_at FROM deployments_governors WHERE deployment_id = ?", deploymentID).
		Scan(&h.Fingerprint, &h.KeyName, &h.Governor, &h.Since, &h.RenewedAt, &h.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}

	if err != nil {
		return nil, fmt.Errorf("read the governor of deployment %d: %w", deploymentID, err)
	}

	return &h, nil
}

// ActiveAt reports whether the hold still holds at now.
func (h *GovernorHold) ActiveAt(now time.Time) bool {
	return h != nil && h.ExpiresAt.After(now)
}

// PutGovernorHold writes the deployment's hold, replacing any.
func PutGovernorHold(ctx context.Context, tx *sql.Tx, h GovernorHold) error {
	_, err := tx.ExecContext(ctx, `
INSERT INTO deployments_governors (deployment_id, fingerprint, key_name, governor, since, renewed_at, expires_at)
VALUES (?, ?, ?, ?, ?, ?, ?)
ON CONFLICT (deployment_id) DO UPDATE SET fingerprint = excluded.fingerprint, key_name = excluded.key_name,
    governor = excluded.governor, since = excluded.since, renewed_at = excluded.renewed_at, expires_at = excluded.expires_at`,
		h.DeploymentID, h.Fingerprint, h.KeyName, h.Governor, h.Since.UTC(), h.RenewedAt.UTC(), h.ExpiresAt.UTC())
	if err != nil {
		return fmt.Errorf("write the governor of deployment %d: %w", h.DeploymentID, err)
	}

	return nil
}

// DeleteGovernorHold removes the deployment's hold, whoever has it.
func DeleteGovernorHold(ctx context.Context, tx *sql.Tx, deploymentID int64) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM deployments_governors WHERE deployment_id = ?", deploymentID)
	if err != nil {
		return fmt.Errorf("release the governor of deployment %d: %w", deploymentID, err)
	}

	return nil
}
