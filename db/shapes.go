package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Shape is a shape row with the ids other tables refer to.
type Shape struct {
	ID           int64
	DeploymentID int64
	api.DeploymentShape

	// ImageFingerprint is the image the template's alias pointed to when last checked, for
	// the image-change trigger.
	ImageFingerprint string

	// Terminating counts the instances that wait in terminating:wait: they still count in
	// ScalingCurrent, but a second delete must not count them again (shapes.CheckShrink).
	Terminating int

	// Going counts the instances on their way out that LXD may still hold (deleting,
	// replacing): not in ScalingCurrent, but they count against the maximum
	// (shapes.CheckGrow).
	Going int

	// Replacing counts the instances autohealing (or a rollout) is replacing: the budget
	// of health.max_unavailable.
	Replacing int

	// ReplaceFailures counts replacements in a row that did not become healthy.
	ReplaceFailures int

	// HealthCheck is "", api.HealthCheckOK or api.HealthCheckBroken (with
	// HealthCheckReason): whether the check started on some instance since the shape's
	// health object last changed (health.CheckState).
	HealthCheck       string
	HealthCheckReason string

	// HealHold says why autohealing holds for the shape (empty when it does not), since
	// HealHoldSince.
	HealHold      string
	HealHoldSince *time.Time
}

// ShapeFilter selects shapes; zero fields match everything.
type ShapeFilter struct {
	DeploymentID int64
	Name         string
}

// GetShapes returns the matching shapes with their config and scaling_current, which is
// derived from the instance rows that count (rules.Counted).
func GetShapes(ctx context.Context, tx *sql.Tx, filter ShapeFilter) ([]Shape, error) {
	var where []string
	var args []any
	if filter.DeploymentID != 0 {
		where = append(where, "s.deployment_id = ?")
		args = append(args, filter.DeploymentID)
	}

	if filter.Name != "" {
		where = append(where, "s.name = ?")
		args = append(args, filter.Name)
	}

	query := `
SELECT s.id, s.deployment_id, s.name, s.description, s.instance_template, s.scaling_minimum, s.scaling_maximum, s.revision, s.rollout, s.image_fingerprint,
       (SELECT COUNT(*) FROM deployments_shapes_instances i WHERE i.deployment_shape_id = s.id AND ` + countedInstance + `),
       (SELECT COUNT(*) FROM deployments_shapes_instances i WHERE i.deployment_shape_id = s.id AND ` + terminatingInstance + `),
       (SELECT COUNT(*) FROM deployments_shapes_instances i WHERE i.deployment_shape_id = s.id AND ` + replacingInstance + `),
       (SELECT COUNT(*) FROM deployments_shapes_instances i WHERE i.deployment_shape_id = s.id AND ` + goingInstance + `),
       (SELECT COUNT(*) FROM deployments_shapes_pool p WHERE p.deployment_shape_id = s.id AND p.state = 'ready'),
       s.health, s.hooks, s.warm_pool, s.degraded, s.replace_failures,
       s.health_check, s.health_check_reason, s.heal_hold, s.heal_hold_since, s.triggers_suspended
  FROM deployments_shapes s`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}

	rows, err := tx.QueryContext(ctx, query+" ORDER BY s.deployment_id, s.name", args...)
	if err != nil {
		return nil, fmt.Errorf("read shapes: %w", err)
	}

	defer func() { _ = rows.Close() }()

	shapes := []Shape{}
	for rows.Next() {
		var s Shape
		var template, rollout, health, hooks, warmPool string
		var holdSince sql.NullTime
		var suspended string
		err = rows.Scan(&s.ID, &s.DeploymentID, &s.Name, &s.Description, &template, &s.ScalingMinimum, &s.ScalingMaximum, &s.Revision, &rollout, &s.ImageFingerprint, &s.ScalingCurrent,
			&s.Terminating, &s.Replacing, &s.Going, &s.WarmPoolReady, &health, &hooks, &warmPool, &s.StatusReason, &s.ReplaceFailures,
			&s.HealthCheck, &s.HealthCheckReason, &s.HealHold, &holdSince, &suspended)
		if err != nil {
			return nil, fmt.Errorf("read shapes: %w", err)
		}

		if holdSince.Valid {
			s.HealHoldSince = &holdSince.Time
		}

		s.TriggersSuspended, err = unmarshalSuspended(suspended)
		if err != nil {
			return nil, fmt.Errorf("shape %q: %w", s.Name, err)
		}

		s.Status = api.ShapeStatus(s.ScalingCurrent, s.ScalingMinimum, s.ScalingMaximum)
		if s.Status == api.ShapeStatusOK && s.StatusReason != "" {
			s.Status = api.ShapeStatusDegraded
		}

		err = unmarshalLifecycle(health, hooks, warmPool, &s.DeploymentShapePut)
		if err != nil {
			return nil, fmt.Errorf("shape %q: %w", s.Name, err)
		}

		s.HealthStatus = healthStatus(&s)
		err = json.Unmarshal([]byte(template), &s.InstanceTemplate)
		if err != nil {
			return nil, fmt.Errorf("shape %q has a corrupt instance template: %w", s.Name, err)
		}

		err = json.Unmarshal([]byte(rollout), &s.Rollout)
		if err != nil {
			return nil, fmt.Errorf("shape %q has corrupt rollout settings: %w", s.Name, err)
		}

		shapes = append(shapes, s)
	}

	err = rows.Err()
	if err != nil {
		return nil, err
	}

	_ = rows.Close()
	if len(shapes) == 0 {
		return shapes, nil
	}

	err = readResourceBounds(ctx, tx, shapes)
	if err != nil {
		return nil, err
	}

	err = loadShapePlacements(ctx, tx, shapes)
	if err != nil {
		return nil, err
	}

	err = loadShapeSchedules(ctx, tx, shapes)
	if err != nil {
		return nil, err
	}

	configs, err := getConfigs(ctx, tx, shapesConfig)
	if err != nil {
		return nil, err
	}

	for i := range shapes {
		shapes[i].Config = configs[shapes[i].ID]
		if shapes[i].Config == nil {
			shapes[i].Config = map[string]string{}
		}
	}

	return shapes, nil
}

// GetShape returns one shape of a deployment, or a 404 that names it.
func GetShape(ctx context.Context, tx *sql.Tx, deploymentID int64, name string) (*Shape, error) {
	shapes, err := GetShapes(ctx, tx, ShapeFilter{DeploymentID: deploymentID, Name: name})
	if err != nil {
		return nil, err
	}

	if len(shapes) == 0 {
		return nil, shapeNotFound(name)
	}

	return &shapes[0], nil
}

// GetShapeID returns the id of a shape of a deployment, or a 404 that names it.
func GetShapeID(ctx context.Context, tx *sql.Tx, deploymentID int64, name string) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM deployments_shapes WHERE deployment_id = ? AND name = ?", deploymentID, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, shapeNotFound(name)
	}

	if err != nil {
		return 0, fmt.Errorf("read shape: %w", err)
	}

	return id, nil
}

func shapeNotFound(name string) error {
	return lxdapi.StatusErrorf(http.StatusNotFound, "shape %q not found in the deployment", name)
}

// GetShapeNames returns the names of a deployment's shapes.
func GetShapeNames(ctx context.Context, tx *sql.Tx, deploymentID int64) ([]string, error) {
	return queryStrings(ctx, tx, "SELECT name FROM deployments_shapes WHERE deployment_id = ? ORDER BY name", deploymentID)
}

// CreateShape adds a shape with its config to a deployment.
func CreateShape(ctx context.Context, tx *sql.Tx, deploymentID int64, req api.DeploymentShapesPost) (int64, error) {
	_, err := GetShapeID(ctx, tx, deploymentID, req.Name)
	if err == nil {
		return 0, lxdapi.StatusErrorf(http.StatusConflict, "shape %q already exists in the deployment", req.Name)
	}

	if !lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return 0, err
	}

	template, err := json.Marshal(req.InstanceTemplate)
	if err != nil {
		return 0, err
	}

	rollout, err := json.Marshal(req.Rollout)
	if err != nil {
		return 0, err
	}

	health, hooks, warmPool, err := marshalLifecycle(req.DeploymentShapePut)
	if err != nil {
		return 0, err
	}

	result, err := tx.ExecContext(ctx, "INSERT INTO deployments_shapes (deployment_id, name, description, instance_template, scaling_minimum, scaling_maximum, rollout, health, hooks, warm_pool) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
		deploymentID, req.Name, req.Description, string(template), req.ScalingMinimum, req.ScalingMaximum, string(rollout), health, hooks, warmPool)
	if err != nil {
		return 0, fmt.Errorf("add shape: %w", err)
	}

	id, err := result.LastInsertId()
	if err != nil {
		return 0, err
	}

	if len(req.ResourceBounds) > 0 {
		err = writeResourceBounds(ctx, tx, id, req.ResourceBounds)
		if err != nil {
			return 0, err
		}
	}

	if req.Placement != nil {
		err = setShapePlacement(ctx, tx, id, req.Placement)
		if err != nil {
			return 0, err
		}
	}

	if len(req.Schedule) > 0 {
		err = setShapeSchedule(ctx, tx, id, req.Schedule)
		if err != nil {
			return 0, err
		}
	}

	return id, replaceConfig(ctx, tx, shapesConfig, id, req.Config)
}

// UpdateShape replaces the writable fields of a shape. A change is someone acting on the
// shape, so it clears a degraded status and lets autohealing try again.
func UpdateShape(ctx context.Context, tx *sql.Tx, id int64, put api.DeploymentShapePut) error {
	template, err := json.Marshal(put.InstanceTemplate)
	if err != nil {
		return err
	}

	rollout, err := json.Marshal(put.Rollout)
	if err != nil {
		return err
	}

	health, hooks, warmPool, err := marshalLifecycle(put)
	if err != nil {
		return err
	}

	// A changed health object is a new check: whether the old one could start says nothing
	// of it (SQLite's SET reads the row as it was before the update).
	_, err = tx.ExecContext(ctx, `
UPDATE deployments_shapes
   SET description = ?, instance_template = ?, scaling_minimum = ?, scaling_maximum = ?, rollout = ?, hooks = ?, warm_pool = ?, degraded = '', replace_failures = 0,
       health_check = CASE WHEN health = ? THEN health_check ELSE '' END,
       health_check_reason = CASE WHEN health = ? THEN health_check_reason ELSE '' END,
       health = ?
 WHERE id = ?`,
		put.Description, string(template), put.ScalingMinimum, put.ScalingMaximum, string(rollout), hooks, warmPool, health, health, health, id)
	if err != nil {
		return fmt.Errorf("update shape: %w", err)
	}

	err = writeResourceBounds(ctx, tx, id, put.ResourceBounds)
	if err != nil {
		return err
	}

	err = setShapePlacement(ctx, tx, id, put.Placement)
	if err != nil {
		return err
	}

	err = setShapeSchedule(ctx, tx, id, put.Schedule)
	if err != nil {
		return err
	}

	// Without checks, old verdicts would mislead (an unhealthy instance picked first to go).
	if put.Health == nil {
		err = forgetInstanceHealth(ctx, tx, id)
		if err != nil {
			return err
		}
	}

	return replaceConfig(ctx, tx, shapesConfig, id, put.Config)
}

// RenameShape renames a shape within its deployment.
func RenameShape(ctx context.Context, tx *sql.Tx, deploymentID int64, id int64, newName string) error {
	_, err := GetShapeID(ctx, tx, deploymentID, newName)
	if err == nil {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %q already exists in the deployment", newName)
	}

	if !lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return err
	}

	_, err = tx.ExecContext(ctx, "UPDATE deployments_shapes SET name = ? WHERE id = ?", newName, id)
	if err != nil {
		return fmt.Errorf("rename shape: %w", err)
	}

	return nil
}

// DeleteShape removes a shape; its config and instance rows go with it.
func DeleteShape(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM deployments_shapes WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete shape: %w", err)
	}

	return nil
}

// SetShapeRevision records the latest revision of a shape.
func SetShapeRevision(ctx context.Context, tx *sql.Tx, id int64, revision int) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes SET revision = ? WHERE id = ?", revision, id)
	if err != nil {
		return fmt.Errorf("record shape revision: %w", err)
	}

	return nil
}

// ErrShapeChanged says a shape was not as a change expected: another daemon changed it first.
var ErrShapeChanged = lxdapi.StatusErrorf(http.StatusConflict, "the shape changed meanwhile")

// SetShapeImageFingerprint records the image a shape's alias points to, if the shape still
// records old (ErrShapeChanged otherwise: another daemon saw the change first).
func SetShapeImageFingerprint(ctx context.Context, tx *sql.Tx, id int64, old string, fingerprint string) error {
	result, err := tx.ExecContext(ctx, "UPDATE deployments_shapes SET image_fingerprint = ? WHERE id = ? AND image_fingerprint = ?", fingerprint, id, old)
	if err != nil {
		return fmt.Errorf("record shape image: %w", err)
	}

	if expectOneRow(result) != nil {
		return ErrShapeChanged
	}

	return nil
}
