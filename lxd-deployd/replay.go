package main

import (
	"context"
	"database/sql"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// replayStore keeps governor token ids in dqlite, so that a token accepted by one member
// is refused by every other (auth.ReplayStore).
type replayStore struct {
	db *db.Cluster
}

// Remember records issuer/jti until expires; false means it was seen before.
func (s replayStore) Remember(ctx context.Context, issuer string, jti string, expires time.Time, now time.Time) (bool, error) {
	var fresh bool
	err := s.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		fresh, err = db.RememberTokenID(ctx, tx, issuer, jti, expires, now)
		return err
	})
	return fresh, err
}
