package cluster

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
)

// TestOperationsListAndVisible: outside a daemon (no cluster) the caller sees this
// member's operations it may see, grouped by status; another deployment's operation is
// not found, as one that does not exist.
func TestOperationsListAndVisible(t *testing.T) {
	ops := operations.NewManager(slog.New(slog.NewTextHandler(io.Discard, nil)), nil, "m1", nil)
	hold := make(chan struct{})
	defer close(hold)
	run := func(ctx context.Context, op *operations.Operation) error {
		<-hold
		return nil
	}

	mine := ops.Start(operations.Args{Description: "mine", DeploymentID: 1, Run: run})
	theirs := ops.Start(operations.Args{Description: "theirs", DeploymentID: 2, Run: run})
	allowed := func(deploymentID int64) bool { return deploymentID == 1 }
	var c *Operations
	urls, full, err := c.List(context.Background(), ops, allowed)
	if err != nil || len(urls["running"]) != 1 || urls["running"][0] != mine.URL() || len(full["running"]) != 1 {
		t.Fatalf("listed: %v %v %v", urls, full, err)
	}

	local, remote, err := c.Visible(context.Background(), ops, mine.API().ID, allowed)
	if err != nil || local != mine || remote != nil {
		t.Fatalf("mine: %v %v %v", local, remote, err)
	}

	_, _, err = c.Visible(context.Background(), ops, theirs.API().ID, allowed)
	if !lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		t.Fatalf("another deployment's operation: %v", err)
	}
}
