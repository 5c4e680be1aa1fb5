package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// RememberTokenID records a governor token's issuer and jti until expires and reports
// whether it was new; false means the token is a replay. Ids expired before now are
// dropped in the same transaction (an index range, cheap when there are none).
func RememberTokenID(ctx context.Context, tx *sql.Tx, issuer string, jti string, expires time.Time, now time.Time) (bool, error) {
	_, err := tx.ExecContext(ctx, "DELETE FROM used_jtis WHERE expires_at < ?", now.UTC())
	if err != nil {
		return false, fmt.Errorf("prune token ids: %w", err)
	}

	// dqlite applies writes one at a time: of two members racing with the same token,
	// exactly one inserts the row.
	result, err := tx.ExecContext(ctx, "INSERT OR IGNORE INTO used_jtis (issuer, jti, expires_at) VALUES (?, ?, ?)", issuer, jti, expires.UTC())
	if err != nil {
		return false, fmt.Errorf("record token id: %w", err)
	}

	n, err := result.RowsAffected()
	return n == 1, err
}

// TokenIDs keeps governor token ids in dqlite, so that a token accepted by one member is
// refused by every other (auth.ReplayStore).
type TokenIDs struct {
	DB *Cluster
}

// Remember records issuer/jti until expires; false means it was seen before.
func (s TokenIDs) Remember(ctx context.Context, issuer string, jti string, expires time.Time, now time.Time) (bool, error) {
	var fresh bool
	err := s.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		fresh, err = RememberTokenID(ctx, tx, issuer, jti, expires, now)
		return err
	})
	return fresh, err
}
