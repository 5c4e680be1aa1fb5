package db

import (
	"context"
	"database/sql"
)

// updateAddRolloutDeployers adds the transient instances of rollouts: the deployer of a
// custom rollout (kind deployer) and the pre and post hooks of the built-in strategies
// (doc/rollouts.md#custom-deployers, #hooks). A row outlives its rollout on purpose (no foreign key): a
// forced shape delete removes the rollout, and the deployer instance in LXD must still be
// found and deleted. Only a hash of the deployer's credential is kept, and it is cleared
// when the deployer ends.
func updateAddRolloutDeployers(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE deployments_shapes_rollouts_deployers (
    rollout_id      INTEGER NOT NULL,
    kind            TEXT NOT NULL CHECK (kind IN ('deployer', 'pre', 'post')),
    project         TEXT NOT NULL,
    instance        TEXT NOT NULL,
    credential_hash TEXT,
    operation       TEXT NOT NULL DEFAULT '',
    exit_code       INTEGER,
    output          TEXT NOT NULL DEFAULT '',
    started_at      DATETIME NOT NULL,
    finished_at     DATETIME,
    deleted         INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (rollout_id, kind)
);
`)
	return err
}
