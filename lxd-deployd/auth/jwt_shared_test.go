package auth

import (
	"context"
	"database/sql"
	"net/http"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
)

// dbReplays is the daemon's ReplayStore: token ids in dqlite.
type dbReplays struct{ c *db.Cluster }

func (s dbReplays) Remember(ctx context.Context, issuer string, jti string, expires time.Time, now time.Time) (bool, error) {
	var fresh bool
	err := s.c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		fresh, err = db.RememberTokenID(ctx, tx, issuer, jti, expires, now)
		return err
	})
	return fresh, err
}

// TestTokenReplayRefusedOnAnotherMember verifies with two members of one dqlite cluster: a
// token accepted by the first is refused by the second, and an expired id is pruned.
func TestTokenReplayRefusedOnAnotherMember(t *testing.T) {
	ctx := context.Background()
	one, first, _ := dbtest.OpenNode(t)
	two, _, _ := dbtest.OpenNode(t, first)

	f := newTokenFixture(t)
	token := f.sign(t, jwt.SigningMethodES384, f.key, f.claims(), f.fp)
	_, err := NewSharedTokenVerifier(dbReplays{one}).Verify(token, f.lookup, f.now)
	if err != nil {
		t.Fatal(err)
	}

	_, err = NewSharedTokenVerifier(dbReplays{two}).Verify(token, f.lookup, f.now)
	expectRefused(t, "replay on another member", err, http.StatusUnauthorized, "already used")

	// Once the first token's id has expired it is pruned by the next write.
	later := f.now.Add(MaxTokenLifetime + TokenLeeway + time.Minute)
	fresh, err := dbReplays{two}.Remember(ctx, f.fp, "other", later.Add(time.Minute), later)
	if err != nil || !fresh {
		t.Fatalf("a new id: %v %v", fresh, err)
	}

	fresh, err = dbReplays{one}.Remember(ctx, f.fp, f.claims()["jti"].(string), later.Add(time.Minute), later)
	if err != nil || !fresh {
		t.Fatalf("an expired id must have been pruned: %v %v", fresh, err)
	}
}
