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

// JoinToken is an outstanding invitation for a new member; only a hash of its secret is
// kept.
type JoinToken struct {
	Name       string
	SecretHash string
	ExpiresAt  time.Time
	CreatedAt  time.Time

	// CertificateFingerprint is the member certificate of the daemon that redeemed the
	// token, "" while nobody has: a token stays until its member joins (SaveMember spends
	// it), and only that daemon may redeem it again meanwhile.
	CertificateFingerprint string
}

// CreateJoinToken records a join token for a new member name. A name that a member or
// another outstanding token has is a 409.
func CreateJoinToken(ctx context.Context, tx *sql.Tx, token JoinToken, now time.Time) error {
	err := joinTokens.purgeExpired(ctx, tx, now)
	if err != nil {
		return err
	}

	var n int
	err = tx.QueryRowContext(ctx, "SELECT (SELECT COUNT(*) FROM members WHERE name = ?) + (SELECT COUNT(*) FROM cluster_join_tokens WHERE name = ?)", token.Name, token.Name).Scan(&n)
	if err != nil {
		return fmt.Errorf("check member name: %w", err)
	}

	if n > 0 {
		return lxdapi.StatusErrorf(http.StatusConflict, "cluster member name %q is taken by a member or an unused join token: choose another name", token.Name)
	}

	_, err = tx.ExecContext(ctx, "INSERT INTO cluster_join_tokens (name, secret_hash, expires_at, created_at) VALUES (?, ?, ?, ?)", token.Name, token.SecretHash, token.ExpiresAt.UTC(), now.UTC())
	if err != nil {
		return fmt.Errorf("add join token: %w", err)
	}

	return nil
}

// ConsumeJoinToken removes and returns the unexpired token whose secret hashes to
// secretHash, so that a token joins one member once.
func ConsumeJoinToken(ctx context.Context, tx *sql.Tx, secretHash string, now time.Time) (*JoinToken, error) {
	token := JoinToken{SecretHash: secretHash}
	err := joinTokens.consume(ctx, tx, secretHash, now, "name, expires_at", &token.Name, &token.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lxdapi.StatusErrorf(http.StatusForbidden, "join token is not valid: it is unknown, expired or already used; run `lxd-deploy cluster add <name>` on a member for a new one")
	}

	if err != nil {
		return nil, err
	}

	return &token, nil
}

// errJoinTokenInvalid is the one answer for an unknown, expired, revoked or spent token.
var errJoinTokenInvalid = lxdapi.StatusErrorf(http.StatusForbidden, "join token is not valid: it is unknown, expired, revoked or already used; run `lxd-deploy cluster add <name>` on a member for a new one")

// ClaimJoinToken redeems the unexpired token whose secret hashes to secretHash for the
// daemon with the member certificate fingerprint: the first redemption binds the token to
// that certificate; the same daemon may redeem it again (a join that failed half way), any
// other is refused, so that a token still lets one daemon in only. The token is spent when
// the member registers (SaveMember).
func ClaimJoinToken(ctx context.Context, tx *sql.Tx, secretHash string, fingerprint string, now time.Time) (*JoinToken, error) {
	err := joinTokens.purgeExpired(ctx, tx, now)
	if err != nil {
		return nil, err
	}

	token := JoinToken{SecretHash: secretHash}
	var created sql.NullTime
	err = tx.QueryRowContext(ctx, "SELECT name, expires_at, created_at, certificate_fingerprint FROM cluster_join_tokens WHERE secret_hash = ?", secretHash).Scan(&token.Name, &token.ExpiresAt, &created, &token.CertificateFingerprint)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errJoinTokenInvalid
	}

	if err != nil {
		return nil, fmt.Errorf("read join token: %w", err)
	}

	token.CreatedAt = created.Time
	switch token.CertificateFingerprint {
	case fingerprint:
		return &token, nil
	case "":
	default:
		return nil, errJoinTokenInvalid
	}

	result, err := tx.ExecContext(ctx, "UPDATE cluster_join_tokens SET certificate_fingerprint = ? WHERE secret_hash = ? AND certificate_fingerprint = ''", fingerprint, secretHash)
	if err != nil {
		return nil, fmt.Errorf("redeem join token: %w", err)
	}

	n, err := result.RowsAffected()
	if err != nil {
		return nil, err
	}

	if n != 1 {
		return nil, errJoinTokenInvalid
	}

	token.CertificateFingerprint = fingerprint
	return &token, nil
}

// GetJoinTokens returns the outstanding (unexpired, not yet spent) join tokens by name.
func GetJoinTokens(ctx context.Context, tx *sql.Tx, now time.Time) ([]JoinToken, error) {
	rows, err := tx.QueryContext(ctx, "SELECT name, expires_at, created_at, certificate_fingerprint FROM cluster_join_tokens WHERE expires_at >= ? ORDER BY name", now.UTC())
	if err != nil {
		return nil, fmt.Errorf("read join tokens: %w", err)
	}

	defer func() { _ = rows.Close() }()
	tokens := []JoinToken{}
	for rows.Next() {
		var t JoinToken
		var created sql.NullTime
		err = rows.Scan(&t.Name, &t.ExpiresAt, &created, &t.CertificateFingerprint)
		if err != nil {
			return nil, fmt.Errorf("read join tokens: %w", err)
		}

		t.CreatedAt = created.Time
		tokens = append(tokens, t)
	}

	return tokens, rows.Err()
}

// DeleteJoinToken revokes the outstanding join token for a member name, or is a 404.
func DeleteJoinToken(ctx context.Context, tx *sql.Tx, name string) error {
	result, err := tx.ExecContext(ctx, "DELETE FROM cluster_join_tokens WHERE name = ?", name)
	if err != nil {
		return fmt.Errorf("revoke join token %q: %w", name, err)
	}

	n, err := result.RowsAffected()
	if err != nil {
		return err
	}

	if n == 0 {
		return lxdapi.StatusErrorf(http.StatusNotFound, "cluster member %q not found, nor a pending join token for it: `lxd-deploy cluster list` and `lxd-deploy cluster list-tokens` show them", name)
	}

	return nil
}
