package main

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/cluster"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// TestOperationsOfOtherMembers: member m1 lists and answers for an operation m2 recorded,
// scoped like its own; when m2 cannot be reached, a wait watches the record and a cancel
// says so.
func TestOperationsOfOtherMembers(t *testing.T) {
	store := dbtest.Open(t)
	now := time.Now().UTC()
	remote := db.Operation{Member: "m2", Project: "default", DeploymentID: 9, Operation: lxdapi.Operation{
		ID: "6a1f0000-0000-0000-0000-000000000001", Description: "Creating instance web1", StatusCode: lxdapi.Running,
		Resources: map[string][]string{"instances": {"/1.0/instances/web1"}}, Metadata: map[string]any{}, MayCancel: true, CreatedAt: now, UpdatedAt: now,
	}}

	err := store.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		return db.SaveOperation(ctx, tx, remote)
	})
	if err != nil {
		t.Fatal(err)
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	ops := operations.NewManager(logger, nil, "m1", nil)
	a := &testAPI{t: t, caller: &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}}
	handlers := apis{operations: operationsAPI{ops: ops, access: access{db: store}, cluster: cluster.NewOperations(store, "m1", nil)}, access: access{db: store}}
	a.router = rest.NewRouter(endpoints(handlers), func(r *http.Request) (*auth.Caller, error) { return a.caller, nil }, logger, false)

	path := "/1.0/operations/" + remote.ID
	got := a.expect("GET", path, "", 200, "")["metadata"].(map[string]any)
	if got["location"] != "m2" || got["status"] != "Running" || got["description"] != "Creating instance web1" {
		t.Fatalf("another member's operation: %v", got)
	}

	listed := a.expect("GET", "/1.0/operations", "", 200, "")["metadata"].(map[string]any)
	if urls, _ := listed["running"].([]any); len(urls) != 1 || urls[0] != path {
		t.Fatalf("list: %v", listed)
	}

	waited := a.expect("GET", path+"/wait?timeout=0", "", 200, "")["metadata"].(map[string]any)
	if waited["status"] != "Running" {
		t.Fatalf("wait on an unreachable member's operation: %v", waited)
	}

	a.expect("DELETE", path, "", 503, "cannot be reached")

	// A governor certificate with no key on deployment 9 sees nothing of it.
	a.caller = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: "deployments", Fingerprint: strings.Repeat("c", 64), Name: "gov"}
	a.expect("GET", path, "", 404, "not found")
	a.expect("GET", path+"/wait?timeout=0", "", 404, "not found")
	listed = a.expect("GET", "/1.0/operations", "", 200, "")["metadata"].(map[string]any)
	if len(listed) != 0 {
		t.Fatalf("a governor must not list other deployments' operations: %v", listed)
	}
}
