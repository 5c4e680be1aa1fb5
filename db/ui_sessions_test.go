package db

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

// Links redeem once and only in time; sessions end with their lifetime, their sign-out, or
// their certificate (updateAddUISessions).
func TestUISessions(t *testing.T) {
	c, err := Open(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = c.Close(context.Background()) }()
	now := time.Date(2026, 11, 24, 18, 0, 0, 0, time.UTC)
	tx := func(f func(ctx context.Context, tx *sql.Tx) error) error {
		return c.Transaction(context.Background(), f)
	}

	var certID int64
	err = tx(func(ctx context.Context, tx *sql.Tx) error {
		certID, err = CreateCertificate(ctx, tx, Certificate{Fingerprint: "aa", Type: "client", Name: "alice", Certificate: "pem"})
		if err != nil {
			return err
		}

		err = CreateUILink(ctx, tx, "aa", "link1", true, now, now.Add(time.Minute))
		if err != nil {
			return err
		}

		return CreateUILink(ctx, tx, "aa", "link2", false, now, now.Add(time.Minute))
	})
	if err != nil {
		t.Fatal(err)
	}

	err = tx(func(ctx context.Context, tx *sql.Tx) error {
		return CreateUILink(ctx, tx, "unknown", "link3", false, now, now.Add(time.Minute))
	})
	if err == nil {
		t.Fatal("a link for a certificate outside the trust store was recorded")
	}

	redeem := func(link string, session string, at time.Time) (*UISession, error) {
		var s *UISession
		err := tx(func(ctx context.Context, tx *sql.Tx) error {
			var err error
			s, err = RedeemUILink(ctx, tx, link, session, at, at.Add(time.Hour))
			return err
		})
		return s, err
	}

	s, err := redeem("link1", "session1", now.Add(30*time.Second))
	if err != nil || s.Fingerprint != "aa" || !s.ReadOnly || !s.ExpiresAt.Equal(now.Add(30*time.Second+time.Hour)) {
		t.Fatalf("redeem: %+v, %v", s, err)
	}

	_, err = redeem("link1", "session1b", now.Add(31*time.Second))
	if !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("a second redeem: %v", err)
	}

	_, err = redeem("link2", "session2", now.Add(time.Minute))
	if !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("a redeem at the link's expiry: %v", err)
	}

	get := func(session string, at time.Time) error {
		return tx(func(ctx context.Context, tx *sql.Tx) error {
			_, err := GetUISession(ctx, tx, session, at)
			return err
		})
	}

	if err := get("session1", now.Add(time.Hour)); err != nil {
		t.Fatalf("live session: %v", err)
	}

	if err := get("session1", now.Add(2*time.Hour)); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("session past its lifetime: %v", err)
	}

	err = tx(func(ctx context.Context, tx *sql.Tx) error {
		return DeleteCertificate(ctx, tx, certID)
	})
	if err != nil {
		t.Fatal(err)
	}

	var rows int
	err = tx(func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM ui_sessions").Scan(&rows)
	})
	if err != nil || rows != 0 {
		t.Fatalf("%d sessions left after their certificate was deleted (%v)", rows, err)
	}
}
