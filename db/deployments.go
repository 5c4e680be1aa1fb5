package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Deployment is a deployment row with the id other tables refer to.
type Deployment struct {
	ID int64
	api.Deployment
}

// DeploymentFilter selects deployments; empty fields match everything.
type DeploymentFilter struct {
	Project string
	Name    string
}

// GetDeployments returns the matching deployments, complete with config, shapes and the
// URLs of their instances, in a fixed number of queries whatever their count.
func GetDeployments(ctx context.Context, tx *sql.Tx, filter DeploymentFilter) ([]Deployment, error) {
	deployments, err := deploymentRows(ctx, tx, filter)
	if err != nil || len(deployments) == 0 {
		return deployments, err
	}

	shapes, err := GetShapes(ctx, tx, ShapeFilter{})
	if err != nil {
		return nil, err
	}

	instances, err := GetInstances(ctx, tx, InstanceFilter{})
	if err != nil {
		return nil, err
	}

	orphans, err := GetOrphans(ctx, tx)
	if err != nil {
		return nil, err
	}

	for i := range deployments {
		d := &deployments[i]
		d.DeploymentShapes = map[string]api.DeploymentShape{}
		for _, shape := range shapes {
			if shape.DeploymentID == d.ID {
				d.DeploymentShapes[shape.Name] = shape.DeploymentShape
			}
		}

		d.UsedBy = []string{}
		d.OrphanedInstances = append([]string{}, orphans[d.ID]...)
		for _, instance := range instances {
			if instance.DeploymentID == d.ID {
				d.UsedBy = append(d.UsedBy, api.InstanceURL(d.Project, instance.Name))
			}
		}
	}

	return deployments, nil
}

// deploymentRows returns the matching deployments' own fields and config, by project and
// name.
func deploymentRows(ctx context.Context, tx *sql.Tx, filter DeploymentFilter) ([]Deployment, error) {
	var where []string
	var args []any
	if filter.Project != "" {
		where = append(where, "project = ?")
		args = append(args, filter.Project)
	}

	if filter.Name != "" {
		where = append(where, "name = ?")
		args = append(args, filter.Name)
	}

	query := "SELECT id, project, name, description, governor_webhook_url, triggers_suspended FROM deployments"
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}

	rows, err := tx.QueryContext(ctx, query+" ORDER BY project, name", args...)
	if err != nil {
		return nil, fmt.Errorf("read deployments: %w", err)
	}

	defer func() { _ = rows.Close() }()
	deployments := []Deployment{}
	for rows.Next() {
		var d Deployment
		var suspended string
		err = rows.Scan(&d.ID, &d.Project, &d.Name, &d.Description, &d.GovernorWebhookURL, &suspended)
		if err != nil {
			return nil, fmt.Errorf("read deployments: %w", err)
		}

		d.TriggersSuspended, err = unmarshalSuspended(suspended)
		if err != nil {
			return nil, fmt.Errorf("deployment %q: %w", d.Name, err)
		}

		deployments = append(deployments, d)
	}

	err = rows.Err()
	if err != nil || len(deployments) == 0 {
		return deployments, err
	}

	_ = rows.Close()
	configs, err := getConfigs(ctx, tx, deploymentsConfig)
	if err != nil {
		return nil, err
	}

	for i := range deployments {
		deployments[i].Config = configs[deployments[i].ID]
		if deployments[i].Config == nil {
			deployments[i].Config = map[string]string{}
		}
	}

	return deployments, nil
}

// GetDeployment returns one deployment, or a 404 that names it.
func GetDeployment(ctx context.Context, tx *sql.Tx, project string, name string) (*Deployment, error) {
	deployments, err := GetDeployments(ctx, tx, DeploymentFilter{Project: project, Name: name})
	if err != nil {
		return nil, err
	}

	if len(deployments) == 0 {
		return nil, deploymentNotFound(project, name)
	}

	return &deployments[0], nil
}

// GetDeploymentID returns the id of a deployment, or a 404 that names it.
func GetDeploymentID(ctx context.Context, tx *sql.Tx, project string, name string) (int64, error) {
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM deployments WHERE project = ? AND name = ?", project, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, deploymentNotFound(project, name)
	}

	if err != nil {
		return 0, fmt.Errorf("read deployment: %w", err)
	}

	return id, nil
}

func deploymentNotFound(project string, name string) error {
	return lxdapi.StatusErrorf(http.StatusNotFound, "deployment %q not found in project %q", name, project)
}

// GetDeploymentNames returns the names of the deployments of a project.
func GetDeploymentNames(ctx context.Context, tx *sql.Tx, project string) ([]string, error) {
	return queryStrings(ctx, tx, "SELECT name FROM deployments WHERE project = ? ORDER BY name", project)
}

// CreateDeployment adds a deployment with its config.
func CreateDeployment(ctx context.Context, tx *sql.Tx, project string, req api.DeploymentsPost) (int64, error) {
	_, err := GetDeploymentID(ctx, tx, project, req.Name)
	if err == nil {
		return 0, lxdapi.StatusErrorf(http.StatusConflict, "deployment %q already exists in project %q", req.Name, project)
	}

	if !lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return 0, err
	}

	result, err := tx.ExecContext(ctx, "INSERT INTO deployments (project, name, description, governor_webhook_url) VALUES (?, ?, ?, ?)", project, req.Name, req.Description, req.GovernorWebhookURL)
	if err != nil {
		return 0, fmt.Errorf("add deployment: %w", err)
	}

	id, err := result.LastInsertId()
	if err != nil {
		return 0, err
	}

	return id, replaceConfig(ctx, tx, deploymentsConfig, id, req.Config)
}

// UpdateDeployment replaces the writable fields of a deployment.
func UpdateDeployment(ctx context.Context, tx *sql.Tx, id int64, put api.DeploymentPut) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments SET description = ?, governor_webhook_url = ? WHERE id = ?", put.Description, put.GovernorWebhookURL, id)
	if err != nil {
		return fmt.Errorf("update deployment: %w", err)
	}

	return replaceConfig(ctx, tx, deploymentsConfig, id, put.Config)
}

// RenameDeployment renames a deployment within its project.
func RenameDeployment(ctx context.Context, tx *sql.Tx, project string, id int64, newName string) error {
	_, err := GetDeploymentID(ctx, tx, project, newName)
	if err == nil {
		return lxdapi.StatusErrorf(http.StatusConflict, "deployment %q already exists in project %q", newName, project)
	}

	if !lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return err
	}

	_, err = tx.ExecContext(ctx, "UPDATE deployments SET name = ? WHERE id = ?", newName, id)
	if err != nil {
		return fmt.Errorf("rename deployment: %w", err)
	}

	return nil
}

// DeleteDeployment removes a deployment; its config, keys, shapes and instance rows go
// with it through ON DELETE CASCADE.
func DeleteDeployment(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM deployments WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete deployment: %w", err)
	}

	return nil
}

// queryStrings runs a query returning one text column.
func queryStrings(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}

	defer func() { _ = rows.Close() }()

	values := []string{}
	for rows.Next() {
		var value string
		err = rows.Scan(&value)
		if err != nil {
			return nil, err
		}

		values = append(values, value)
	}

	return values, rows.Err()
}

// GetDeploymentRow returns a deployment's own fields (no config or shapes) by id.
func GetDeploymentRow(ctx context.Context, tx *sql.Tx, id int64) (*Deployment, error) {
	d := &Deployment{ID: id}
	err := tx.QueryRowContext(ctx, "SELECT project, name, description, governor_webhook_url FROM deployments WHERE id = ?", id).Scan(&d.Project, &d.Name, &d.Description, &d.GovernorWebhookURL)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "deployment %d not found", id)
	}

	if err != nil {
		return nil, fmt.Errorf("read deployment: %w", err)
	}

	return d, nil
}
