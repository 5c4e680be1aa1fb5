package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// tokenTable names a table of one-use tokens (kept as secret_hash with an expires_at) and
// what errors call them. Only the constants below are ever used, so building SQL from
// them is safe.
type tokenTable struct {
	table string
	noun  string
}

var (
	trustTokens = tokenTable{table: "certificates_tokens", noun: "trust token"}
	joinTokens  = tokenTable{table: "cluster_join_tokens", noun: "join token"}
)

// purgeExpired deletes the tokens that expired before now.
func (t tokenTable) purgeExpired(ctx context.Context, tx *sql.Tx, now time.Time) error {
	_, err := tx.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE expires_at < ?", t.table), now.UTC())
	if err != nil {
		return fmt.Errorf("purge expired %ss: %w", t.noun, err)
	}

	return nil
}

// consume scans columns of the unexpired token whose secret hashes to secretHash into dest
// and deletes it, so that a token can be used once only; expired tokens are purged on the
// way. An unknown, expired or used token is sql.ErrNoRows, for the caller to word.
func (t tokenTable) consume(ctx context.Context, tx *sql.Tx, secretHash string, now time.Time, columns string, dest ...any) error {
	err := t.purgeExpired(ctx, tx, now)
	if err != nil {
		return err
	}

	err = tx.QueryRowContext(ctx, fmt.Sprintf("SELECT %s FROM %s WHERE secret_hash = ?", columns, t.table), secretHash).Scan(dest...)
	if errors.Is(err, sql.ErrNoRows) {
		return err
	}

	if err != nil {
		return fmt.Errorf("read %s: %w", t.noun, err)
	}

	_, err = tx.ExecContext(ctx, fmt.Sprintf("DELETE FROM %s WHERE secret_hash = ?", t.table), secretHash)
	if err != nil {
		return fmt.Errorf("consume %s: %w", t.noun, err)
	}

	return nil
}
