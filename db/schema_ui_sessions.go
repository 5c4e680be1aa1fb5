package db

import (
	"context"
	"database/sql"
)

// updateAddUISessions adds the web view's sign-in links and sessions (doc/ui.md). A row is
// a link until it is redeemed (session_hash set), then the session it started. Only hashes
// of the secrets are kept, so a database dump signs nobody in. Each row is bound to a trust
// store entry: deleting the certificate ends its sessions.
func updateAddUISessions(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `
CREATE TABLE ui_sessions (
    id              INTEGER PRIMARY KEY AUTOINCREMENT NOT NULL,
    certificate_id  INTEGER NOT NULL,
    link_hash       TEXT NOT NULL,
    session_hash    TEXT,
    read_only       INTEGER NOT NULL,
    created_at      DATETIME NOT NULL,
    link_expires_at DATETIME NOT NULL,
    expires_at      DATETIME NOT NULL,
    UNIQUE (link_hash),
    UNIQUE (session_hash),
    FOREIGN KEY (certificate_id) REFERENCES certificates (id) ON DELETE CASCADE
);
CREATE INDEX ui_sessions_expires_idx ON ui_sessions (expires_at);
`)
	return err
}
