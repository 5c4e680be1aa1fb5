package db

import (
	"context"
	"database/sql"
)

// updateAddMemberCredentials adds what the security review of issue 25 needs:
//   - members.certificate and certificate_fingerprint: each member's own certificate, the
//     only thing another member's HTTPS API accepts from it, so that removing the member's
//     row revokes it on every member at once;
//   - members.cluster_fingerprint and cluster_accepted: the cluster certificate (dqlite's
//     TLS) the member presents now and the newest one it accepts, so that a rotation
//     presents a new certificate only once every member accepts it, and retires the old
//     one only once every member presents the new one;
//   - cluster_join_tokens.certificate_fingerprint and created_at: the member certificate
//     that redeemed the token (a retry with the same certificate is allowed, another one
//     not), since a token is spent only once its member joined; and its age for listing;
//   - cluster_certificates: the cluster certificates in use; the newest is presented, every
//     one not retired is accepted while members move over;
//   - deployments_shapes_instances.health_exit_code: the exit code of the last health
//     check, which webhooks, events and the activity log carry instead of its output.
func updateAddMemberCredentials(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
ALTER TABLE members ADD COLUMN certificate TEXT NOT NULL DEFAULT '';
ALTER TABLE members ADD COLUMN certificate_fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE members ADD COLUMN cluster_fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE members ADD COLUMN cluster_accepted TEXT NOT NULL DEFAULT '';

ALTER TABLE cluster_join_tokens ADD COLUMN certificate_fingerprint TEXT NOT NULL DEFAULT '';
ALTER TABLE cluster_join_tokens ADD COLUMN created_at DATETIME;

CREATE TABLE cluster_certificates (
    id          INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    fingerprint TEXT NOT NULL,
    certificate TEXT NOT NULL,
    private_key TEXT NOT NULL,
    created_at  DATETIME NOT NULL,
    retired_at  DATETIME,
    UNIQUE (fingerprint)
);

ALTER TABLE deployments_shapes_instances ADD COLUMN health_exit_code INTEGER NOT NULL DEFAULT 0;
`)
	return err
}
