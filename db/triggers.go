package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// unmarshalSuspended reads a triggers_suspended column: "" is not suspended.
func unmarshalSuspended(column string) (*api.DeploymentTriggersSuspended, error) {
	if column == "" {
		return nil, nil
	}

	var s api.DeploymentTriggersSuspended
	err := json.Unmarshal([]byte(column), &s)
	if err != nil {
		return nil, fmt.Errorf("corrupt triggers_suspended: %w", err)
	}

	return &s, nil
}

func marshalSuspended(s *api.DeploymentTriggersSuspended) (string, error) {
	if s == nil {
		return "", nil
	}

	data, err := json.Marshal(s)
	return string(data), err
}

// SetShapeTriggersSuspended suspends a shape's triggers, or resumes them with nil.
func SetShapeTriggersSuspended(ctx context.Context, tx *sql.Tx, shapeID int64, s *api.DeploymentTriggersSuspended) error {
	column, err := marshalSuspended(s)
	if err != nil {
		return err
	}

	_, err = tx.ExecContext(ctx, "UPDATE deployments_shapes SET triggers_suspended = ? WHERE id = ?", column, shapeID)
	if err != nil {
		return fmt.Errorf("record shape triggers: %w", err)
	}

	return nil
}

// SetDeploymentTriggersSuspended sets a deployment's kill switch, or clears it with nil.
func SetDeploymentTriggersSuspended(ctx context.Context, tx *sql.Tx, deploymentID int64, s *api.DeploymentTriggersSuspended) error {
	column, err := marshalSuspended(s)
	if err != nil {
		return err
	}

	_, err = tx.ExecContext(ctx, "UPDATE deployments SET triggers_suspended = ? WHERE id = ?", column, deploymentID)
	if err != nil {
		return fmt.Errorf("record deployment triggers: %w", err)
	}

	return nil
}

// GetDeploymentTriggersSuspended reads a deployment's kill switch (nil when off).
func GetDeploymentTriggersSuspended(ctx context.Context, tx *sql.Tx, deploymentID int64) (*api.DeploymentTriggersSuspended, error) {
	var column string
	err := tx.QueryRowContext(ctx, "SELECT triggers_suspended FROM deployments WHERE id = ?", deploymentID).Scan(&column)
	if err != nil {
		return nil, fmt.Errorf("read deployment triggers: %w", err)
	}

	return unmarshalSuspended(column)
}
