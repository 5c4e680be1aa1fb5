package health

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestFlushSkipsDeletedInstances records a tick's results in one transaction: the result
// of an instance deleted meanwhile is skipped, never failing the batch and losing the
// other instances' verdicts.
func TestFlushSkipsDeletedInstances(t *testing.T) {
	cluster := dbtest.Open(t)
	ctx := context.Background()
	rows, settings := checkedFleet(t, cluster, &api.DeploymentShapeHealth{Command: []string{"true"}, Grace: "0s"}, 3)
	c := &Checker{DB: cluster, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, row := range rows {
		c.pending = append(c.pending, pendingResult{target: target{row: row, settings: settings}, result: Result{At: time.Now(), Passed: true, Output: "ok"}})
	}

	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteInstance(ctx, tx, rows[1].ID, db.InstanceCreated)
	})
	if err != nil {
		t.Fatal(err)
	}

	c.flush(ctx)
	if len(c.pending) != 0 {
		t.Fatalf("%d results left pending", len(c.pending))
	}

	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		after, err := db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: rows[0].ShapeID})
		if err != nil {
			return err
		}

		if len(after) != 2 {
			t.Fatalf("%d instances, want 2", len(after))
		}

		for _, row := range after {
			if row.Health.Status != api.HealthHealthy || row.Health.CheckedAt == nil {
				t.Errorf("%s: health %+v, want a healthy verdict", row.Name, row.Health)
			}
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
