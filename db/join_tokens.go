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

	_, err = tx.ExecContext(ctx, "INSERT INTO cluster_join_tokens (name, secret_hash, expires_at) VALUES (?, ?, ?)", token.Name, token.SecretHash, token.ExpiresAt.UTC())
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
