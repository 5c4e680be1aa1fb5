package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// update is one schema step. Steps are append-only: never edit one that has shipped, add a
// new one instead, so that every database can be brought forward from any version.
type update func(ctx context.Context, tx *sql.Tx) error

// updates maps each schema version to the step that produces it from the version before.
var updates = map[int]update{
	1:  updateFromV0,
	2:  updateFromV1,
	3:  updateFromV2,
	4:  updateFromV3,
	5:  updateFromV4,
	6:  updateFromV5,
	7:  updateAddMetricsCertificates,
	8:  updateAddClusterState,
	9:  updateAddRevisionsRolloutsActivity,
	10: updateAddInstanceLifecycle,
	11: updateAddInstanceSizesRollout,
	12: updateAddMemberCredentials,
	13: updateAddUISessions,
	14: updateAddResourceBounds,
	15: updateAddPlacement,
	16: updateAddFailSafe,
	17: updateAddRevisionImages,
	18: updateAddSchedule,
	19: updateAddGovernorHolds,
	20: updateAddRolloutDeployers,
	21: updateAddTraffic,
}

// SchemaVersion is the version a fully updated database has.
func SchemaVersion() int {
	return len(updates)
}

// applyUpdates brings the schema from its current version to the last one in steps.
func applyUpdates(ctx context.Context, tx *sql.Tx, steps map[int]update) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE IF NOT EXISTS schema (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    version    INTEGER NOT NULL,
    updated_at DATETIME NOT NULL,
    UNIQUE (version)
)`)
	if err != nil {
		return fmt.Errorf("create schema table: %w", err)
	}

	current, err := schemaVersion(ctx, tx)
	if err != nil {
		return err
	}

	if current > len(steps) {
		return fmt.Errorf("database schema version %d is newer than this daemon's %d: upgrade lxd-deployd", current, len(steps))
	}

	for version := current + 1; version <= len(steps); version++ {
		step, ok := steps[version]
		if !ok {
			return fmt.Errorf("schema update %d is missing: updates must be contiguous", version)
		}

		err = step(ctx, tx)
		if err != nil {
			return fmt.Errorf("schema update %d: %w", version, err)
		}

		_, err = tx.ExecContext(ctx, "INSERT INTO schema (version, updated_at) VALUES (?, ?)", version, time.Now().UTC())
		if err != nil {
			return fmt.Errorf("record schema version %d: %w", version, err)
		}
	}

	return nil
}

// schemaVersion returns the highest applied schema version, 0 for a new database.
func schemaVersion(ctx context.Context, tx *sql.Tx) (int, error) {
	var version sql.NullInt64
	err := tx.QueryRowContext(ctx, "SELECT MAX(version) FROM schema").Scan(&version)
	if err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}

	return int(version.Int64), nil
}

// updateFromV0 creates the first schema: the trust store and the deployment tables of
// seed 004. scaling_current is not stored: it is the count of a shape's instance rows.
func updateFromV0(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE certificates (
    id          INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    fingerprint TEXT NOT NULL,
    type        TEXT NOT NULL CHECK (type IN ('client', 'deployments')),
    name        TEXT NOT NULL,
    certificate TEXT NOT NULL,
    UNIQUE (fingerprint)
);

CREATE TABLE certificates_tokens (
    id          INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    name        TEXT NOT NULL,
    type        TEXT NOT NULL CHECK (type IN ('client', 'deployments')),
    secret_hash TEXT NOT NULL,
    expires_at  DATETIME NOT NULL,
    UNIQUE (secret_hash)
);

CREATE TABLE deployments (
    id                   INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    project              TEXT NOT NULL,
    name                 TEXT NOT NULL,
    description          TEXT NOT NULL DEFAULT '',
    governor_webhook_url TEXT NOT NULL DEFAULT '',
    UNIQUE (project, name)
);

CREATE TABLE deployments_config (
    id            INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_id INTEGER NOT NULL,
    key           TEXT NOT NULL,
    value         TEXT NOT NULL,
    UNIQUE (deployment_id, key),
    FOREIGN KEY (deployment_id) REFERENCES deployments (id) ON DELETE CASCADE
);

CREATE TABLE deployments_keys (
    id             INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_id  INTEGER NOT NULL,
    certificate_id INTEGER NOT NULL,
    name           TEXT NOT NULL,
    description    TEXT NOT NULL DEFAULT '',
    role           TEXT NOT NULL CHECK (role IN ('admin', 'read-only')),
    UNIQUE (deployment_id, name),
    FOREIGN KEY (deployment_id) REFERENCES deployments (id) ON DELETE CASCADE,
    FOREIGN KEY (certificate_id) REFERENCES certificates (id) ON DELETE CASCADE
);

CREATE TABLE deployments_shapes (
    id                INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_id     INTEGER NOT NULL,
    name              TEXT NOT NULL,
    description       TEXT NOT NULL DEFAULT '',
    instance_template TEXT NOT NULL,
    scaling_minimum   INTEGER NOT NULL CHECK (scaling_minimum >= 0),
    scaling_maximum   INTEGER NOT NULL CHECK (scaling_maximum >= scaling_minimum),
    UNIQUE (deployment_id, name),
    FOREIGN KEY (deployment_id) REFERENCES deployments (id) ON DELETE CASCADE
);

CREATE TABLE deployments_shapes_config (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_shape_id INTEGER NOT NULL,
    key                 TEXT NOT NULL,
    value               TEXT NOT NULL,
    UNIQUE (deployment_shape_id, key),
    FOREIGN KEY (deployment_shape_id) REFERENCES deployments_shapes (id) ON DELETE CASCADE
);

CREATE TABLE deployments_shapes_instances (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_shape_id INTEGER NOT NULL,
    name                TEXT NOT NULL,
    state               TEXT NOT NULL DEFAULT 'creating',
    created_at          DATETIME NOT NULL,
    UNIQUE (deployment_shape_id, name),
    FOREIGN KEY (deployment_shape_id) REFERENCES deployments_shapes (id) ON DELETE CASCADE
);

CREATE INDEX deployments_keys_certificate_id_idx ON deployments_keys (certificate_id);
`)
	return err
}

// updateFromV1 records which instance template an instance was created from, and indexes
// instance names, which must be unique within an LXD project.
func updateFromV1(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments_shapes_instances ADD COLUMN template_hash TEXT NOT NULL DEFAULT '';
CREATE INDEX deployments_shapes_instances_name_idx ON deployments_shapes_instances (name);
`)
	return err
}

// updateFromV2 adds webhooks: a signing secret per deployment (existing deployments get a
// random one), and the durable delivery queue. claimed_by/claimed_until let exactly one
// daemon of a cluster send each delivery.
func updateFromV2(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments ADD COLUMN webhook_secret TEXT NOT NULL DEFAULT '';
UPDATE deployments SET webhook_secret = lower(hex(randomblob(32)));

CREATE TABLE webhook_deliveries (
    id                 INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    uuid               TEXT NOT NULL,
    deployment_id      INTEGER NOT NULL,
    type               TEXT NOT NULL,
    body               TEXT NOT NULL,
    status             TEXT NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts           INTEGER NOT NULL DEFAULT 0,
    last_response_code INTEGER NOT NULL DEFAULT 0,
    last_error         TEXT NOT NULL DEFAULT '',
    created_at         DATETIME NOT NULL,
    next_attempt_at    DATETIME NOT NULL,
    delivered_at       DATETIME,
    claimed_by         TEXT NOT NULL DEFAULT '',
    claimed_until      DATETIME,
    UNIQUE (uuid),
    FOREIGN KEY (deployment_id) REFERENCES deployments (id) ON DELETE CASCADE
);

CREATE INDEX webhook_deliveries_due_idx ON webhook_deliveries (status, next_attempt_at);
`)
	return err
}

// updateFromV3 adds manifests: every templated config applied to a deployment, with what it
// expanded to (seed 000) and why it was applied (seed 002's causes). Names are numbered
// per deployment (manifest-1, manifest-2, ...).
func updateFromV3(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE deployments_manifests (
    id              INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_id   INTEGER NOT NULL,
    name            TEXT NOT NULL,
    input_config    TEXT NOT NULL,
    imports         TEXT NOT NULL DEFAULT '{}',
    expanded_config TEXT NOT NULL,
    layout          TEXT NOT NULL,
    cause           TEXT NOT NULL DEFAULT '',
    created_at      DATETIME NOT NULL,
    UNIQUE (deployment_id, name),
    FOREIGN KEY (deployment_id) REFERENCES deployments (id) ON DELETE CASCADE
);
`)
	return err
}

// updateFromV4 records which instances were made with a governor socket, so that their
// sockets come back after a restart whatever the shape's governor.socket says by then.
func updateFromV4(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments_shapes_instances ADD COLUMN governor_socket INTEGER NOT NULL DEFAULT 0;
UPDATE deployments_shapes_instances SET governor_socket = 1
 WHERE deployment_shape_id IN (SELECT deployment_shape_id FROM deployments_shapes_config WHERE key = 'governor.socket' AND value = 'true');
`)
	return err
}

// updateFromV5 records which daemon last changed an instance record, and when, so that in
// a cluster one daemon's reconcile does not repair another's launch that is still running.
func updateFromV5(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments_shapes_instances ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes_instances ADD COLUMN state_changed_at DATETIME;
UPDATE deployments_shapes_instances SET state_changed_at = created_at;
`)
	return err
}

// updateAddMetricsCertificates lets the trust store hold "metrics" certificates, which read
// /1.0/metrics and nothing else (as LXD's). SQLite cannot change a CHECK constraint in place,
// so both tables are rebuilt. Dropping certificates would cascade to deployment keys, so
// the keys are set aside in a plain table and put back once the new table has the old ids.
func updateAddMetricsCertificates(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE certificates_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    fingerprint TEXT NOT NULL,
    type        TEXT NOT NULL CHECK (type IN ('client', 'deployments', 'metrics')),
    name        TEXT NOT NULL,
    certificate TEXT NOT NULL,
    UNIQUE (fingerprint)
);
INSERT INTO certificates_new (id, fingerprint, type, name, certificate)
    SELECT id, fingerprint, type, name, certificate FROM certificates;

CREATE TABLE deployments_keys_saved AS SELECT * FROM deployments_keys;
DROP TABLE certificates;
ALTER TABLE certificates_new RENAME TO certificates;
INSERT INTO deployments_keys SELECT * FROM deployments_keys_saved;
DROP TABLE deployments_keys_saved;

CREATE TABLE certificates_tokens_new (
    id          INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    name        TEXT NOT NULL,
    type        TEXT NOT NULL CHECK (type IN ('client', 'deployments', 'metrics')),
    secret_hash TEXT NOT NULL,
    expires_at  DATETIME NOT NULL,
    UNIQUE (secret_hash)
);
INSERT INTO certificates_tokens_new (id, name, type, secret_hash, expires_at)
    SELECT id, name, type, secret_hash, expires_at FROM certificates_tokens;
DROP TABLE certificates_tokens;
ALTER TABLE certificates_tokens_new RENAME TO certificates_tokens;
`)
	return err
}

// updateAddInstanceLifecycle adds what health checks, autohealing, lifecycle hooks and warm
// pools keep: the shape's health, hooks and warm_pool objects (JSON, empty when absent) and
// whether autohealing gave up on it; each instance's last health verdict and the hook it
// waits in, with a deadline that survives a restart; and the warm pool instances, which are
// not instances of the shape and so live in their own table.
func updateAddInstanceLifecycle(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE deployments_shapes ADD COLUMN health TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes ADD COLUMN hooks TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes ADD COLUMN warm_pool TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes ADD COLUMN degraded TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes ADD COLUMN replace_failures INTEGER NOT NULL DEFAULT 0;

ALTER TABLE deployments_shapes_instances ADD COLUMN health TEXT NOT NULL DEFAULT 'unknown';
ALTER TABLE deployments_shapes_instances ADD COLUMN health_output TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes_instances ADD COLUMN health_checked_at DATETIME;
ALTER TABLE deployments_shapes_instances ADD COLUMN health_streak INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments_shapes_instances ADD COLUMN replacement INTEGER NOT NULL DEFAULT 0;
ALTER TABLE deployments_shapes_instances ADD COLUMN hook TEXT NOT NULL DEFAULT '';
ALTER TABLE deployments_shapes_instances ADD COLUMN hook_deadline DATETIME;
ALTER TABLE deployments_shapes_instances ADD COLUMN hook_action TEXT NOT NULL DEFAULT '';

CREATE TABLE deployments_shapes_pool (
    id                  INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_shape_id INTEGER NOT NULL,
    name                TEXT NOT NULL,
    template_hash       TEXT NOT NULL,
    state               TEXT NOT NULL CHECK (state IN ('creating', 'ready', 'taking')),
    owner               TEXT NOT NULL DEFAULT '',
    created_at          DATETIME NOT NULL,
    state_changed_at    DATETIME NOT NULL,
    UNIQUE (name),
    FOREIGN KEY (deployment_shape_id) REFERENCES deployments_shapes (id) ON DELETE CASCADE
);

-- Every read of a shape counts its instances by state (and hook): a covering index keeps
-- that off the table rows, so the bound check's transaction stays short.
CREATE INDEX deployments_shapes_instances_count_idx ON deployments_shapes_instances (deployment_shape_id, state, hook);
CREATE INDEX deployments_shapes_pool_shape_idx ON deployments_shapes_pool (deployment_shape_id, state);
`)
	return err
}

// updateAddInstanceSizesRollout records on each instance whether its launch moved the size
// of a running rollout, so that reconcile, dropping the record of a launch a crash cut short,
// can move the size back as the launch itself does when LXD refuses it. Existing rows get 1:
// most launches are the governor's, which move it.
func updateAddInstanceSizesRollout(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, "ALTER TABLE deployments_shapes_instances ADD COLUMN sizes_rollout INTEGER NOT NULL DEFAULT 1")
	return err
}
