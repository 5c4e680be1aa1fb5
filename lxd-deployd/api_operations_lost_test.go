package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/cluster"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// TestLostMemberOperations, on two real dqlite nodes: m2 records an operation on its node;
// a waiter on m1 (m2 cannot be reached to wait there) wakes with the failure the holder of
// the reconcile lease on m1 settles once m2 is past the grace period; a removed member's
// operations are settled at once; m1's own are never touched.
func TestLostMemberOperations(t *testing.T) {
	ctx := context.Background()
	one, first, _ := dbtest.OpenNode(t)
	two, second, closeTwo := dbtest.OpenNode(t, first)

	var err error
	now := time.Now()
	for _, node := range []struct {
		cluster *db.Cluster
		member  db.Member
	}{{one, db.Member{Name: "m1", Address: "127.0.0.1:1", DatabaseAddress: first}}, {two, db.Member{Name: "m2", Address: "127.0.0.1:1", DatabaseAddress: second}}} {
		node.member.StartedAt, node.member.HeartbeatAt = now, now
		err = node.cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error { return db.SaveMember(ctx, tx, node.member) })
		if err != nil {
			t.Fatal(err)
		}
	}

	record := func(store *db.Cluster, member string, id string) {
		t.Helper()
		err := cluster.NewOperationRecorder(store.Writes(), member).Record(ctx, lxdapi.Operation{
			ID: id, Description: "Creating instance web1", StatusCode: lxdapi.Running, Metadata: map[string]any{}, MayCancel: true, CreatedAt: now, UpdatedAt: now,
			Resources: map[string][]string{"instances": {"/1.0/instances/web1"}},
		}, "default", 0)
		if err != nil {
			t.Fatal(err)
		}
	}

	offline := "6a1f0000-0000-0000-0000-000000000001"
	removed := "6a1f0000-0000-0000-0000-000000000002"
	own := "6a1f0000-0000-0000-0000-000000000003"
	record(two, "m2", offline)
	record(one, "m1", own)

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	m1 := cluster.NewOperations(one, "m1", nil)
	a := &testAPI{t: t, caller: &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}}
	handlers := apis{operations: operationsAPI{ops: operations.NewManager(logger, nil, "m1", nil), access: access{db: one}, cluster: m1}, access: access{db: one}}
	a.router = rest.NewRouter(endpoints(handlers), func(r *http.Request) (*auth.Caller, error) { return a.caller, nil }, logger, false)

	// A waiter on m1, as LXD's Operation.Wait() would through a member that did not start
	// the operation.
	woke := make(chan map[string]any, 1)
	go func() {
		rec := httptest.NewRecorder()
		a.router.ServeHTTP(rec, httptest.NewRequest("GET", "/1.0/operations/"+offline+"/wait?timeout=60", nil))
		envelope := map[string]any{}
		_ = json.Unmarshal(rec.Body.Bytes(), &envelope)
		woke <- envelope
	}()

	held, err := lease.NewManager(one, "m1", lease.DefaultTTL, logger).Acquire(ctx, leaseReconcile)
	if err != nil {
		t.Fatal(err)
	}

	fence := func(ctx context.Context, tx *sql.Tx) error { return lease.Check(ctx, tx, held) }
	settled, err := m1.SettleLost(ctx, fence, time.Now().Add(cluster.OfflineAfter+time.Second))
	if err != nil || settled != 0 {
		t.Fatalf("m2 only just went offline: settled %d (%v)", settled, err)
	}

	// Past the grace period (the clock moved on rather than the test waiting 30 s).
	settled, err = m1.SettleLost(ctx, fence, time.Now().Add(cluster.LostMemberGrace+time.Second))
	if err != nil || settled != 1 {
		t.Fatalf("settle m2's operation: settled %d (%v)", settled, err)
	}

	select {
	case envelope := <-woke:
		metadata, _ := envelope["metadata"].(map[string]any)
		if metadata["status"] != "Failure" || metadata["location"] != "m2" || !strings.Contains(metadata["err"].(string), "member m2 went offline while running this operation") {
			t.Fatalf("the waiter on m1 woke with %v", envelope)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter on m1 did not wake when m2's operation was settled")
	}

	// m2 is removed from the cluster: an operation it recorded just before is settled at
	// once, whatever its last heartbeat.
	record(two, "m2", removed)
	err = one.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteMember(ctx, tx, "m2")
	})
	if err != nil {
		t.Fatal(err)
	}

	err = one.RemoveNode(ctx, second, map[string]bool{first: true})
	if err != nil {
		t.Fatal(err)
	}

	closeCtx, cancel := context.WithTimeout(ctx, time.Second)
	closeTwo(closeCtx)
	cancel()

	settled, err = m1.SettleLost(ctx, fence, time.Now())
	if err != nil || settled != 1 {
		t.Fatalf("settle the removed member's operation: settled %d (%v)", settled, err)
	}

	got := a.expect("GET", "/1.0/operations/"+removed, "", 200, "")["metadata"].(map[string]any)
	if got["status"] != "Failure" || !strings.Contains(got["err"].(string), "member m2 was removed from the cluster") {
		t.Fatalf("removed member's operation: %v", got)
	}

	// Even with a clock far ahead, m1's own operation is its own business.
	settled, err = m1.SettleLost(ctx, fence, time.Now().Add(time.Hour))
	if err != nil || settled != 0 {
		t.Fatalf("m1's own operation: settled %d (%v)", settled, err)
	}

	// A member that lost the lease settles nothing.
	err = lease.NewManager(one, "m1", lease.DefaultTTL, logger).Release(ctx, held)
	if err != nil {
		t.Fatal(err)
	}

	record(one, "m3", removed+"4")
	_, err = m1.SettleLost(ctx, fence, time.Now())
	if err == nil {
		t.Fatal("settling without the reconcile lease must fail")
	}
}
