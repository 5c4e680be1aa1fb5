package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// manifestPrefix starts every manifest name; the number after it counts a deployment's
// manifests from 1.
const manifestPrefix = "manifest-"

// Manifest is a manifest row with the ids other tables refer to.
type Manifest struct {
	ID           int64
	DeploymentID int64
	api.DeploymentManifest
}

// ManifestLayout is the layout of the latest manifest of one deployment, for the types API.
type ManifestLayout struct {
	Deployment string
	Manifest   string
	Layout     api.DeploymentManifestConfig
}

// CreateManifest records an applied config as the deployment's next manifest and returns
// its name. m.Name is ignored; a zero m.CreatedAt means now.
func CreateManifest(ctx context.Context, tx *sql.Tx, deploymentID int64, m api.DeploymentManifest) (string, error) {
	var last string
	err := tx.QueryRowContext(ctx, "SELECT name FROM deployments_manifests WHERE deployment_id = ? ORDER BY id DESC LIMIT 1", deploymentID).Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("read manifests: %w", err)
	}

	number := 0
	if last != "" {
		number, err = strconv.Atoi(strings.TrimPrefix(last, manifestPrefix))
		if err != nil {
			return "", fmt.Errorf("manifest %q has a name this daemon does not number", last)
		}
	}

	name := manifestPrefix + strconv.Itoa(number+1)
	if m.CreatedAt.IsZero() {
		m.CreatedAt = time.Now()
	}

	if m.Imports == nil {
		m.Imports = map[string]string{}
	}

	var columns [3][]byte
	for i, v := range []any{m.Imports, m.ExpandedConfig, m.Layout} {
		columns[i], err = json.Marshal(v)
		if err != nil {
			return "", fmt.Errorf("encode manifest: %w", err)
		}
	}

	_, err = tx.ExecContext(ctx, "INSERT INTO deployments_manifests (deployment_id, name, input_config, imports, expanded_config, layout, cause, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		deploymentID, name, m.InputConfig, string(columns[0]), string(columns[1]), string(columns[2]), m.Cause, m.CreatedAt.UTC())
	if err != nil {
		return "", fmt.Errorf("add manifest: %w", err)
	}

	// Keep the history bounded: the newest ManifestsKept manifests stay, enough to roll back
	// a long way, without letting every apply grow the database for ever.
	_, err = tx.ExecContext(ctx, `
DELETE FROM deployments_manifests
 WHERE deployment_id = ? AND id NOT IN (
       SELECT id FROM deployments_manifests WHERE deployment_id = ? ORDER BY id DESC LIMIT ?)`, deploymentID, deploymentID, ManifestsKept)
	if err != nil {
		return "", fmt.Errorf("prune manifests: %w", err)
	}

	return name, nil
}

// ManifestsKept is how many manifests a deployment keeps.
const ManifestsKept = 100

const manifestColumns = "id, deployment_id, name, input_config, imports, expanded_config, layout, cause, created_at"

// scanManifests reads rows of manifestColumns.
func scanManifests(rows *sql.Rows) ([]Manifest, error) {
	defer func() { _ = rows.Close() }()

	manifests := []Manifest{}
	for rows.Next() {
		var m Manifest
		var imports, expanded, layout string
		err := rows.Scan(&m.ID, &m.DeploymentID, &m.Name, &m.InputConfig, &imports, &expanded, &layout, &m.Cause, &m.CreatedAt)
		if err != nil {
			return nil, fmt.Errorf("read manifests: %w", err)
		}

		for _, column := range []struct {
			data   string
			target any
		}{{imports, &m.Imports}, {expanded, &m.ExpandedConfig}, {layout, &m.Layout}} {
			err = json.Unmarshal([]byte(column.data), column.target)
			if err != nil {
				return nil, fmt.Errorf("manifest %q is corrupt: %w", m.Name, err)
			}
		}

		manifests = append(manifests, m)
	}

	return manifests, rows.Err()
}

// GetManifests returns a deployment's manifests, oldest first.
func GetManifests(ctx context.Context, tx *sql.Tx, deploymentID int64) ([]Manifest, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+manifestColumns+" FROM deployments_manifests WHERE deployment_id = ? ORDER BY id", deploymentID)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}

	return scanManifests(rows)
}

// GetManifestNames returns the names of a deployment's manifests, oldest first.
func GetManifestNames(ctx context.Context, tx *sql.Tx, deploymentID int64) ([]string, error) {
	return queryStrings(ctx, tx, "SELECT name FROM deployments_manifests WHERE deployment_id = ? ORDER BY id", deploymentID)
}

// GetManifest returns one manifest of a deployment, or a 404 that names it.
func GetManifest(ctx context.Context, tx *sql.Tx, deploymentID int64, name string) (*Manifest, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+manifestColumns+" FROM deployments_manifests WHERE deployment_id = ? AND name = ?", deploymentID, name)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}

	manifests, err := scanManifests(rows)
	if err != nil {
		return nil, err
	}

	if len(manifests) == 0 {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "manifest %q not found in the deployment", name)
	}

	return &manifests[0], nil
}

// GetLatestManifest returns a deployment's latest manifest, or nil when no template was
// ever applied to it.
func GetLatestManifest(ctx context.Context, tx *sql.Tx, deploymentID int64) (*Manifest, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+manifestColumns+" FROM deployments_manifests WHERE deployment_id = ? ORDER BY id DESC LIMIT 1", deploymentID)
	if err != nil {
		return nil, fmt.Errorf("read manifest: %w", err)
	}

	manifests, err := scanManifests(rows)
	if err != nil || len(manifests) == 0 {
		return nil, err
	}

	return &manifests[0], nil
}

// GetLatestLayouts returns the layout of the latest manifest of every deployment of a
// project that has one, by deployment name.
func GetLatestLayouts(ctx context.Context, tx *sql.Tx, project string) ([]ManifestLayout, error) {
	rows, err := tx.QueryContext(ctx, `
SELECT d.name, m.name, m.layout
  FROM deployments_manifests m
  JOIN deployments d ON d.id = m.deployment_id
 WHERE d.project = ?
   AND m.id = (SELECT MAX(latest.id) FROM deployments_manifests latest WHERE latest.deployment_id = d.id)
 ORDER BY d.name`, project)
	if err != nil {
		return nil, fmt.Errorf("read manifests: %w", err)
	}

	defer func() { _ = rows.Close() }()

	layouts := []ManifestLayout{}
	for rows.Next() {
		var l ManifestLayout
		var layout string
		err = rows.Scan(&l.Deployment, &l.Manifest, &layout)
		if err != nil {
			return nil, fmt.Errorf("read manifests: %w", err)
		}

		err = json.Unmarshal([]byte(layout), &l.Layout)
		if err != nil {
			return nil, fmt.Errorf("manifest %q of deployment %q is corrupt: %w", l.Manifest, l.Deployment, err)
		}

		layouts = append(layouts, l)
	}

	return layouts, rows.Err()
}
