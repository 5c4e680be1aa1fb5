package db

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

// TestLostCommitIsReadBack resolves a COMMIT that lost its connection from the marker the
// transaction wrote: applied when the marker is there, safe to retry when it is not.
func TestLostCommitIsReadBack(t *testing.T) {
	c := newTestCluster(t)
	ctx := context.Background()
	var marker string
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		var before int64
		err := tx.QueryRowContext(ctx, "SELECT total_changes()").Scan(&before)
		if err != nil {
			return err
		}

		marker, err = markCommit(ctx, tx, before)
		if err != nil || marker != "" {
			t.Fatalf("a transaction that changed nothing needs no marker: %q %v", marker, err)
		}

		_, err = tx.ExecContext(ctx, "INSERT INTO deployments (project, name) VALUES ('default', 'd1')")
		if err != nil {
			return err
		}

		marker, err = markCommit(ctx, tx, before)
		return err
	})

	if marker == "" {
		t.Fatal("a transaction that changed rows must write a marker")
	}

	lost := func(marker string) error { return commitError{err: sql.ErrConnDone, marker: marker} }
	if err := c.resolveLostCommit(ctx, lost(marker)); err != nil {
		t.Fatalf("an applied commit must resolve to success, got %v", err)
	}

	for _, m := range []string{"", "0123456789abcdef"} {
		err := c.resolveLostCommit(ctx, lost(m))
		if !isLostBeforeCommit(err) {
			t.Fatalf("marker %q: an unapplied commit must be retryable, got %v", m, err)
		}
	}

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		return PruneCommitMarkers(ctx, tx, time.Now().Add(time.Minute))
	})
	if err := c.resolveLostCommit(ctx, lost(marker)); !isLostBeforeCommit(err) {
		t.Fatalf("a pruned marker reads as not applied, got %v", err)
	}
}

func TestMembersOrphansJoinTokensAndOperations(t *testing.T) {
	c := newTestCluster(t)
	now := time.Now()
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := SaveMember(ctx, tx, Member{Name: "m1", Address: "127.0.0.1:1", DatabaseAddress: "db1", HeartbeatAt: now})
		if err != nil {
			return err
		}

		expectStatus(t, SaveMember(ctx, tx, Member{Name: "m1", DatabaseAddress: "db2", HeartbeatAt: now}), 409)
		ok, err := MemberHeartbeat(ctx, tx, "db1", now)
		if err != nil || !ok {
			t.Fatalf("heartbeat: %v %v", ok, err)
		}

		ok, err = MemberHeartbeat(ctx, tx, "gone", now)
		if err != nil || ok {
			t.Fatalf("heartbeat of a removed member must say so: %v %v", ok, err)
		}

		expectStatus(t, CreateJoinToken(ctx, tx, JoinToken{Name: "m1", SecretHash: "h0", ExpiresAt: now.Add(time.Hour)}, now), 409)
		err = CreateJoinToken(ctx, tx, JoinToken{Name: "m2", SecretHash: "h1", ExpiresAt: now.Add(time.Hour)}, now)
		if err != nil {
			return err
		}

		token, err := ConsumeJoinToken(ctx, tx, "h1", now)
		if err != nil || token.Name != "m2" {
			t.Fatalf("consume: %+v %v", token, err)
		}

		_, err = ConsumeJoinToken(ctx, tx, "h1", now)
		expectStatus(t, err, 403)
		err = CreateJoinToken(ctx, tx, JoinToken{Name: "m3", SecretHash: "h2", ExpiresAt: now.Add(-time.Second)}, now)
		if err != nil {
			return err
		}

		_, err = ConsumeJoinToken(ctx, tx, "h2", now)
		expectStatus(t, err, 403)

		id, err := tx.ExecContext(ctx, "INSERT INTO deployments (project, name) VALUES ('default', 'd1')")
		if err != nil {
			return err
		}

		dep, _ := id.LastInsertId()
		added, err := ReplaceOrphans(ctx, tx, map[int64][]string{dep: {"/a", "/b"}}, now)
		if err != nil || len(added[dep]) != 2 {
			t.Fatalf("orphans added: %v %v", added, err)
		}

		added, err = ReplaceOrphans(ctx, tx, map[int64][]string{dep: {"/b"}}, now)
		if err != nil || len(added) != 0 {
			t.Fatalf("a known orphan is not new: %v %v", added, err)
		}

		orphans, err := GetOrphans(ctx, tx)
		if err != nil || len(orphans[dep]) != 1 || orphans[dep][0] != "/b" {
			t.Fatalf("orphans: %v %v", orphans, err)
		}

		return nil
	})

	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := GetMember(ctx, tx, "nobody")
		return err
	})
	expectStatus(t, err, 404)
	if errors.Is(err, sql.ErrNoRows) {
		t.Fatal("a missing member is a 404, not a bare ErrNoRows")
	}
}
