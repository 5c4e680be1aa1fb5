package db

import (
	"context"
	"database/sql"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// TestFailOperation: only unfinished operations are listed and settled; an outcome the
// member wrote first stands.
func TestFailOperation(t *testing.T) {
	c := newTestCluster(t)
	now := time.Now().UTC()
	save := func(id string, status lxdapi.StatusCode) {
		tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
			return SaveOperation(ctx, tx, Operation{Member: "m2", Project: "default", Operation: lxdapi.Operation{
				ID: id, Description: "Creating instance " + id, StatusCode: status, Resources: map[string][]string{}, Metadata: map[string]any{}, MayCancel: true, CreatedAt: now, UpdatedAt: now,
			}})
		})
	}

	save("running", lxdapi.Running)
	save("pending", lxdapi.Pending)
	save("done", lxdapi.Success)

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		unfinished, err := GetUnfinishedOperations(ctx, tx)
		if err != nil || len(unfinished) != 2 || unfinished[0].Member != "m2" {
			t.Fatalf("unfinished operations: %+v %v", unfinished, err)
		}

		for _, id := range []string{"running", "pending", "done"} {
			settled, err := FailOperation(ctx, tx, id, "member m2 went away", now.Add(time.Second))
			if err != nil || settled != (id != "done") {
				t.Fatalf("settle %s: %v %v", id, settled, err)
			}
		}

		op, err := GetOperation(ctx, tx, "running")
		if err != nil || op.StatusCode != lxdapi.Failure || op.Err != "member m2 went away" || op.MayCancel {
			t.Fatalf("settled operation: %+v %v", op, err)
		}

		op, err = GetOperation(ctx, tx, "done")
		if err != nil || op.StatusCode != lxdapi.Success || op.Err != "" {
			t.Fatalf("a finished operation must keep its outcome: %+v %v", op, err)
		}

		unfinished, err = GetUnfinishedOperations(ctx, tx)
		if err != nil || len(unfinished) != 0 {
			t.Fatalf("after settling: %+v %v", unfinished, err)
		}

		return nil
	})
}
