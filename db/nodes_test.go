package db

import (
	"context"
	"database/sql"
	"net"
	"testing"
	"time"
)

func loopbackAddress(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

// TestRemoveLeaderOfTwo removes the leader of a two-node cluster through the other node:
// the other node takes the voter role and leadership first and goes on alone; the last
// voter with nobody to take its place is refused.
func TestRemoveLeaderOfTwo(t *testing.T) {
	ctx := context.Background()
	first := loopbackAddress(t)
	one, err := Open(ctx, t.TempDir(), Options{Address: first})
	if err != nil {
		t.Fatal(err)
	}

	defer func() {
		// Removed from the cluster, it has nobody to hand over to: do not wait for that.
		closeCtx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_ = one.Close(closeCtx)
	}()

	second := loopbackAddress(t)
	two, err := Open(ctx, t.TempDir(), Options{Address: second, Cluster: []string{first}})
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = two.Close(ctx) }()
	removeCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err = two.RemoveNode(removeCtx, first, map[string]bool{second: true})
	if err != nil {
		t.Fatal(err)
	}

	nodes, err := two.Nodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].Address != second || nodes[0].Role != "voter" || !nodes[0].Leader {
		t.Fatalf("after removing the leader: %+v %v", nodes, err)
	}

	tx(t, two, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO deployments (project, name) VALUES ('default', 'after')")
		return err
	})

	err = two.RemoveNode(ctx, second, nil)
	expectStatus(t, err, 409)
}
