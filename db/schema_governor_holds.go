package db

import (
	"context"
	"database/sql"
)

// updateAddGovernorHolds adds deployments_governors: the one active governor of a
// deployment (seed 004's review: "there should only be one active governor per
// deployment"), one row per deployment at most. fingerprint is the holder's certificate
// ("" for the unix socket), key_name the deployment key it held at registration ("" for an
// admin), governor the name the governor gave itself, since when it first took the
// deployment; a row whose expires_at has passed holds nothing.
func updateAddGovernorHolds(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE deployments_governors (
    deployment_id INTEGER PRIMARY KEY NOT NULL,
    fingerprint   TEXT NOT NULL,
    key_name      TEXT NOT NULL,
    governor      TEXT NOT NULL,
    since         DATETIME NOT NULL,
    renewed_at    DATETIME NOT NULL,
    expires_at    DATETIME NOT NULL,
    FOREIGN KEY (deployment_id) REFERENCES deployments (id) ON DELETE CASCADE
);
`)
	return err
}
