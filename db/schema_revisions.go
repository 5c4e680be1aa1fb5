package db

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"
)

// updateAddRevisionsRolloutsActivity adds shape revisions (seed 002's history: every change
// of a shape's writable fields, with its cause and requestor), rollouts (the replacement of
// outdated instances, claimed by one daemon at a time through claimed_by/claimed_until),
// the per-deployment activity log, the shape's rollout settings and the revision each
// instance was made from. Existing shapes get revision 1 as they are now; their instances
// made from the current template are at revision 1, older ones at 0 (outdated).
func updateAddRevisionsRolloutsActivity(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments_shapes ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments_shapes ADD COLUMN rollout TEXT NOT NULL DEFAULT '{}';
ALTER TABLE deployments_shapes ADD COLUMN image_fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes_instances ADD COLUMN revision INTEGER NOT NULL DEFAULT 0;

CREATE TABLE deployments_shapes_revisions (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_shape_id INTEGER NOT NULL,
    revision            INTEGER NOT NULL,
    shape               TEXT NOT NULL,
    cause               TEXT NOT NULL,
    requestor           TEXT NOT NULL DEFAULT '{}',
    notes               TEXT NOT NULL DEFAULT '',
    created_at          DATETIME NOT NULL,
    UNIQUE (deployment_shape_id, revision),
    FOREIGN KEY (deployment_shape_id) REFERENCES deployments_shapes (id) ON DELETE CASCADE
);

CREATE TABLE deployments_shapes_rollouts (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_shape_id INTEGER NOT NULL,
    number              INTEGER NOT NULL,
    status              TEXT NOT NULL CHECK (status IN ('running', 'paused', 'complete', 'failed', 'cancelled', 'reverted')),
    phase               TEXT NOT NULL DEFAULT '',
    reason              TEXT NOT NULL DEFAULT '',
    revision            INTEGER NOT NULL,
    from_revision       INTEGER NOT NULL,
    strategy            TEXT NOT NULL DEFAULT '{}',
    cause               TEXT NOT NULL DEFAULT '',
    requestor           TEXT NOT NULL DEFAULT '{}',
    notes               TEXT NOT NULL DEFAULT '',
    size                INTEGER NOT NULL,
    promoted            INTEGER NOT NULL DEFAULT 0,
    progress_at         DATETIME NOT NULL,
    created_at          DATETIME NOT NULL,
    updated_at          DATETIME NOT NULL,
    finished_at         DATETIME,
    claimed_by          TEXT NOT NULL DEFAULT '',
    claimed_until       DATETIME,
    UNIQUE (deployment_shape_id, number),
    FOREIGN KEY (deployment_shape_id) REFERENCES deployments_shapes (id) ON DELETE CASCADE
);

CREATE INDEX deployments_shapes_rollouts_status_idx ON deployments_shapes_rollouts (status);

CREATE TABLE deployments_activity (
    id            INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_id INTEGER NOT NULL,
    shape         TEXT NOT NULL DEFAULT '',
    action        TEXT NOT NULL,
    from_size     INTEGER NOT NULL DEFAULT 0,
    to_size       INTEGER NOT NULL DEFAULT 0,
    who           TEXT NOT NULL DEFAULT '',
    requestor     TEXT NOT NULL DEFAULT '{}',
    why           TEXT NOT NULL DEFAULT '',
    created_at    DATETIME NOT NULL,
    FOREIGN KEY (deployment_id) REFERENCES deployments (id) ON DELETE CASCADE
);

CREATE INDEX deployments_activity_deployment_idx ON deployments_activity (deployment_id, id);
`)
	if err != nil {
		return err
	}

	// Revision 1 of every existing shape, written from the columns as they are at this
	// version (not through GetShapes, which follows later versions).
	type oldShape struct {
		id                    int64
		description, template string
		minimum, maximum      int
	}

	rows, err := tx.QueryContext(ctx, "SELECT id, description, instance_template, scaling_minimum, scaling_maximum FROM deployments_shapes")
	if err != nil {
		return err
	}

	var shapes []oldShape
	for rows.Next() {
		var s oldShape
		err = rows.Scan(&s.id, &s.description, &s.template, &s.minimum, &s.maximum)
		if err != nil {
			_ = rows.Close()
			return err
		}

		shapes = append(shapes, s)
	}

	_ = rows.Close()
	configs, err := getConfigs(ctx, tx, shapesConfig)
	if err != nil {
		return err
	}

	for _, s := range shapes {
		config := configs[s.id]
		if config == nil {
			config = map[string]string{}
		}

		shape, err := json.Marshal(map[string]any{
			"description":       s.description,
			"config":            config,
			"instance_template": json.RawMessage(s.template),
			"scaling_minimum":   s.minimum,
			"scaling_maximum":   s.maximum,
			"rollout":           map[string]any{},
		})
		if err != nil {
			return err
		}

		_, err = tx.ExecContext(ctx, "INSERT INTO deployments_shapes_revisions (deployment_shape_id, revision, shape, cause, requestor, notes, created_at) VALUES (?, 1, ?, 'api', ?, 'recorded when revisions were introduced', ?)",
			s.id, string(shape), `{"protocol":"internal","name":"upgrade"}`, time.Now().UTC())
		if err != nil {
			return fmt.Errorf("record revision 1: %w", err)
		}

		// The template hash is what backend.TemplateHash computes over the same JSON.
		sum := sha256.Sum256([]byte(s.template))
		_, err = tx.ExecContext(ctx, "UPDATE deployments_shapes SET revision = 1 WHERE id = ?", s.id)
		if err != nil {
			return err
		}

		_, err = tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET revision = 1 WHERE deployment_shape_id = ? AND template_hash = ?", s.id, hex.EncodeToString(sum[:6]))
		if err != nil {
			return err
		}
	}

	return nil
}
