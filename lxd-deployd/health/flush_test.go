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
	checks := &api.DeploymentShapeHealth{Command: []string{"true"}, Grace: "0s"}
	var rows []db.Instance
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		depID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		shapeID, err := db.CreateShape(ctx, tx, depID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 3, Health: checks}})
		if err != nil {
			return err
		}

		for _, name := range []string{"web1", "web2", "web3"} {
			id, err := db.CreateInstance(ctx, tx, "default", shapeID, name, "hash", 1, "me", time.Now())
			if err != nil {
				return err
			}

			err = db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "me", time.Now())
			if err != nil {
				return err
			}
		}

		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shapeID})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	settings, _ := Parse(checks)
	c := &Checker{DB: cluster, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, row := range rows {
		c.pending = append(c.pending, pendingResult{target: target{row: row, settings: settings}, result: Result{At: time.Now(), Passed: true, Output: "ok"}})
	}

	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
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
