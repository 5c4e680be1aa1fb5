package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// UISession is a sign-in link of the web view and, once redeemed, its session.
type UISession struct {
	ID          int64
	Fingerprint string // of the trust store entry it acts as
	ReadOnly    bool
	CreatedAt   time.Time
	// LinkExpiresAt is when the link stops working if nobody used it.
	LinkExpiresAt time.Time
	// ExpiresAt is when the session ends, however active it is.
	ExpiresAt time.Time
}

// CreateUILink records a sign-in link for the certificate with the fingerprint, keeping only
// the hash of its secret. Links and sessions past their time are dropped on the way.
func CreateUILink(ctx context.Context, tx *sql.Tx, fingerprint string, linkHash string, readOnly bool, now time.Time, linkExpires time.Time) error {
	err := pruneUISessions(ctx, tx, now)
	if err != nil {
		return err
	}

	var certID int64
	err = tx.QueryRowContext(ctx, "SELECT id FROM certificates WHERE fingerprint = ?", fingerprint).Scan(&certID)
	if errors.Is(err, sql.ErrNoRows) {
		return lxdapi.StatusErrorf(http.StatusBadRequest, "no certificate %q in the trust store: sign-in links act as a trusted certificate (lxd-deploy config trust list)", fingerprint)
	}

	if err != nil {
		return fmt.Errorf("read certificate: %w", err)
	}

	// The link's expiry is also the row's until it is redeemed, so pruning drops unused links.
	_, err = tx.ExecContext(ctx, "INSERT INTO ui_sessions (certificate_id, link_hash, read_only, created_at, link_expires_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
		certID, linkHash, readOnly, now.UTC(), linkExpires.UTC(), linkExpires.UTC())
	if err != nil {
		return fmt.Errorf("record sign-in link: %w", err)
	}

	return nil
}

// RedeemUILink turns an unused, unexpired link into a session ending at sessionExpires. It
// answers sql.ErrNoRows for a link that is unknown, used or expired: one UPDATE decides, so
// of two browsers racing with the same link exactly one gets a session.
func RedeemUILink(ctx context.Context, tx *sql.Tx, linkHash string, sessionHash string, now time.Time, sessionExpires time.Time) (*UISession, error) {
	result, err := tx.ExecContext(ctx, "UPDATE ui_sessions SET session_hash = ?, expires_at = ? WHERE link_hash = ? AND session_hash IS NULL AND link_expires_at > ?",
		sessionHash, sessionExpires.UTC(), linkHash, now.UTC())
	if err != nil {
		return nil, fmt.Errorf("redeem sign-in link: %w", err)
	}

	n, err := result.RowsAffected()
	if err != nil {
		return nil, err
	}

	if n != 1 {
		return nil, sql.ErrNoRows
	}

	return GetUISession(ctx, tx, sessionHash, now)
}

// GetUISession returns the live session with the secret's hash, or sql.ErrNoRows.
func GetUISession(ctx context.Context, tx *sql.Tx, sessionHash string, now time.Time) (*UISession, error) {
	s := UISession{}
	err := tx.QueryRowContext(ctx, `
SELECT ui_sessions.id, certificates.fingerprint, ui_sessions.read_only, ui_sessions.created_at, ui_sessions.link_expires_at, ui_sessions.expires_at
FROM ui_sessions JOIN certificates ON certificates.id = ui_sessions.certificate_id
WHERE ui_sessions.session_hash = ? AND ui_sessions.expires_at > ?`, sessionHash, now.UTC()).
		Scan(&s.ID, &s.Fingerprint, &s.ReadOnly, &s.CreatedAt, &s.LinkExpiresAt, &s.ExpiresAt)
	if err != nil {
		return nil, err
	}

	return &s, nil
}

// DeleteUISession ends the session with the secret's hash (sign out); none is not an error.
func DeleteUISession(ctx context.Context, tx *sql.Tx, sessionHash string) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM ui_sessions WHERE session_hash = ?", sessionHash)
	if err != nil {
		return fmt.Errorf("delete session: %w", err)
	}

	return nil
}

// pruneUISessions drops links and sessions past their time, but keeps each row for
// UILinkHistory after its link was made, so that the cap on links made per hour counts
// links already used or expired.
func pruneUISessions(ctx context.Context, tx *sql.Tx, now time.Time) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM ui_sessions WHERE expires_at <= ? AND created_at <= ?", now.UTC(), now.Add(-UILinkHistory).UTC())
	if err != nil {
		return fmt.Errorf("prune sessions: %w", err)
	}

	return nil
}
