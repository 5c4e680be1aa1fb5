package db

import (
	"context"
	"database/sql"
)

// updateAddClusterState moves what each daemon used to keep in memory into dqlite, so that
// every member of a cluster sees the same world:
//   - leases: one owner per background task (reconcile, metrics, webhooks, rollouts...),
//     with a fencing token that grows each time the lease changes hands;
//   - members: each daemon's name, API and database addresses, when its process started
//     and its last heartbeat;
//   - cluster_join_tokens: one-time secrets (stored hashed) for `lxd-deploy cluster add`;
//   - orphans: instances tagged as a deployment's that it has no record of, as found by
//     the member running reconcile, readable from every member;
//   - used_jtis: governor JWT ids seen until they expire, so a token replays on no member;
//   - operations: every member's background operations, so any member can list them and
//     forward to the member that runs one;
//   - commit_markers: one row written by each transaction that changes something, so that
//     when the leader dies during COMMIT the outcome can be read back instead of guessed.
func updateAddClusterState(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE leases (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    name       TEXT NOT NULL,
    holder     TEXT NOT NULL,
    token      INTEGER NOT NULL,
    expires_at DATETIME NOT NULL,
    UNIQUE (name)
);

CREATE TABLE members (
    id               INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    name             TEXT NOT NULL,
    address          TEXT NOT NULL DEFAULT '',
    database_address TEXT NOT NULL,
    started_at       DATETIME NOT NULL,
    heartbeat_at     DATETIME NOT NULL,
    UNIQUE (name),
    UNIQUE (database_address)
);

CREATE TABLE cluster_join_tokens (
    id          INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    name        TEXT NOT NULL,
    secret_hash TEXT NOT NULL,
    expires_at  DATETIME NOT NULL,
    UNIQUE (name),
    UNIQUE (secret_hash)
);

CREATE TABLE orphans (
    id            INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    deployment_id INTEGER NOT NULL,
    url           TEXT NOT NULL,
    found_at      DATETIME NOT NULL,
    UNIQUE (deployment_id, url),
    FOREIGN KEY (deployment_id) REFERENCES deployments (id) ON DELETE CASCADE
);

CREATE TABLE used_jtis (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    issuer     TEXT NOT NULL,
    jti        TEXT NOT NULL,
    expires_at DATETIME NOT NULL,
    UNIQUE (issuer, jti)
);

CREATE INDEX used_jtis_expires_at_idx ON used_jtis (expires_at);

CREATE TABLE operations (
    id            INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    uuid          TEXT NOT NULL,
    member        TEXT NOT NULL,
    description   TEXT NOT NULL,
    project       TEXT NOT NULL DEFAULT '',
    deployment_id INTEGER NOT NULL DEFAULT 0,
    status_code   INTEGER NOT NULL,
    resources     TEXT NOT NULL DEFAULT '{}',
    metadata      TEXT NOT NULL DEFAULT '{}',
    err           TEXT NOT NULL DEFAULT '',
    may_cancel    INTEGER NOT NULL DEFAULT 0,
    created_at    DATETIME NOT NULL,
    updated_at    DATETIME NOT NULL,
    UNIQUE (uuid)
);

CREATE INDEX operations_updated_at_idx ON operations (updated_at);

CREATE TABLE commit_markers (
    id         INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    marker     TEXT NOT NULL,
    created_at DATETIME NOT NULL,
    UNIQUE (marker)
);

CREATE INDEX commit_markers_created_at_idx ON commit_markers (created_at);
`)
	return err
}
