package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// CreateRevision records a new revision of a shape and makes it the shape's latest.
func CreateRevision(ctx context.Context, tx *sql.Tx, shapeID int64, rev api.DeploymentShapeRevision) error {
	shape, err := json.Marshal(rev.Shape)
	if err != nil {
		return err
	}

	requestor, err := json.Marshal(rev.Requestor)
	if err != nil {
		return err
	}

	_, err = tx.ExecContext(ctx, "INSERT INTO deployments_shapes_revisions (deployment_shape_id, revision, shape, cause, requestor, notes, created_at, image_fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		shapeID, rev.Revision, string(shape), rev.Cause, string(requestor), rev.Notes, rev.CreatedAt.UTC(), rev.ImageFingerprint)
	if err != nil {
		return fmt.Errorf("record revision: %w", err)
	}

	return SetShapeRevision(ctx, tx, shapeID, rev.Revision)
}

// GetRevisions returns a shape's revisions, newest first, with how many instances each has.
// A revision of 0 returns them all, otherwise only that one.
func GetRevisions(ctx context.Context, tx *sql.Tx, shapeID int64, revision int) ([]api.DeploymentShapeRevision, error) {
	query := `
SELECT r.revision, r.shape, r.cause, r.requestor, r.notes, r.created_at, r.image_fingerprint,
       (SELECT COUNT(*) FROM deployments_shapes_instances i WHERE i.deployment_shape_id = r.deployment_shape_id AND i.revision = r.revision)
  FROM deployments_shapes_revisions r
 WHERE r.deployment_shape_id = ?`
	args := []any{shapeID}
	if revision != 0 {
		query += " AND r.revision = ?"
		args = append(args, revision)
	}

	rows, err := tx.QueryContext(ctx, query+" ORDER BY r.revision DESC", args...)
	if err != nil {
		return nil, fmt.Errorf("read revisions: %w", err)
	}

	defer func() { _ = rows.Close() }()
	revisions := []api.DeploymentShapeRevision{}
	for rows.Next() {
		var r api.DeploymentShapeRevision
		var shape, requestor string
		err = rows.Scan(&r.Revision, &shape, &r.Cause, &requestor, &r.Notes, &r.CreatedAt, &r.ImageFingerprint, &r.Instances)
		if err != nil {
			return nil, fmt.Errorf("read revisions: %w", err)
		}

		err = errors.Join(json.Unmarshal([]byte(shape), &r.Shape), json.Unmarshal([]byte(requestor), &r.Requestor))
		if err != nil {
			return nil, fmt.Errorf("revision %d is corrupt: %w", r.Revision, err)
		}

		if r.Shape.Config == nil {
			r.Shape.Config = map[string]string{}
		}

		revisions = append(revisions, r)
	}

	return revisions, rows.Err()
}

// GetRevision returns one revision of a shape, or a 404 that says which exist.
func GetRevision(ctx context.Context, tx *sql.Tx, shapeID int64, revision int) (*api.DeploymentShapeRevision, error) {
	revisions, err := GetRevisions(ctx, tx, shapeID, revision)
	if err != nil {
		return nil, err
	}

	if len(revisions) == 0 {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "revision %d of the shape not found (pruned, or never made): list them with GET .../revisions", revision)
	}

	return &revisions[0], nil
}

// PruneRevisions keeps a shape's newest keep revisions, and any older one an instance or an
// unfinished rollout still uses. Revisions whose cause is apart (resizes) and the others are
// counted separately, keep of each: a stream of one kind (a governor resizing within its
// bounds every minute) never pushes the other out, so an admin's revisions stay there to
// roll back to (issue 32). "" keeps nothing apart.
func PruneRevisions(ctx context.Context, tx *sql.Tx, shapeID int64, keep int, apart string) error {
	for _, isApart := range []bool{true, false} {
		_, err := tx.ExecContext(ctx, `
DELETE FROM deployments_shapes_revisions
 WHERE deployment_shape_id = ?
   AND (cause = ? AND ? <> '') = ?
   AND revision NOT IN (SELECT revision FROM deployments_shapes_revisions
                         WHERE deployment_shape_id = ? AND (cause = ? AND ? <> '') = ?
                         ORDER BY revision DESC LIMIT ?)
   AND revision NOT IN (SELECT revision FROM deployments_shapes_instances WHERE deployment_shape_id = ?)
   AND revision NOT IN (SELECT revision FROM deployments_shapes_rollouts WHERE deployment_shape_id = ? AND status IN ('running', 'paused'))
   AND revision NOT IN (SELECT from_revision FROM deployments_shapes_rollouts WHERE deployment_shape_id = ? AND status IN ('running', 'paused'))`,
			shapeID, apart, apart, isApart, shapeID, apart, apart, isApart, keep, shapeID, shapeID, shapeID)
		if err != nil {
			return fmt.Errorf("prune revisions: %w", err)
		}
	}

	return nil
}

// SetRevisionImage records the image a revision's alias resolved to, unless one is recorded
// already: the image trigger's first sighting of a shape's alias comes after the revision
// that named it.
func SetRevisionImage(ctx context.Context, tx *sql.Tx, shapeID int64, revision int, fingerprint string) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_revisions SET image_fingerprint = ? WHERE deployment_shape_id = ? AND revision = ? AND image_fingerprint = ''", fingerprint, shapeID, revision)
	if err != nil {
		return fmt.Errorf("record revision image: %w", err)
	}

	return nil
}
