package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// UILinkHistory is how long a sign-in link's row is kept after it was made, at least: the
// window of the cap on links made per trust store entry (doc/ui.md).
const UILinkHistory = time.Hour

// CountUILinks returns, for the trust store entry with the fingerprint, how many of its
// sign-in links are open (neither used nor expired) and how many were made after since
// (which must be within UILinkHistory of now).
func CountUILinks(ctx context.Context, tx *sql.Tx, fingerprint string, now time.Time, since time.Time) (open int, made int, err error) {
	err = tx.QueryRowContext(ctx, `
SELECT
    COALESCE(SUM(ui_sessions.session_hash IS NULL AND ui_sessions.link_expires_at > ?), 0),
    COALESCE(SUM(ui_sessions.created_at > ?), 0)
FROM ui_sessions JOIN certificates ON certificates.id = ui_sessions.certificate_id
WHERE certificates.fingerprint = ?`, now.UTC(), since.UTC(), fingerprint).Scan(&open, &made)
	if err != nil {
		return 0, 0, fmt.Errorf("count sign-in links: %w", err)
	}

	return open, made, nil
}
