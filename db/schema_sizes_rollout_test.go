package db

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Instance records from before updateAddInstanceSizesRollout count as moving a running
// rollout's size (most launches are the governor's); a reservation that did not move it
// says so, and reconcile reads it back.
func TestUpdateAddInstanceSizesRollout(t *testing.T) {
	c, err := openNode(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close(context.Background()) })
	before := map[int]update{}
	for v := 1; v < SchemaVersion(); v++ {
		before[v] = updates[v]
	}

	var shapeID int64
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := applyUpdates(ctx, tx, before)
		if err != nil {
			return err
		}

		deploymentID, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		shapeID, err = CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 3}})
		if err != nil {
			return err
		}

		_, err = CreateInstance(ctx, tx, "default", shapeID, "old", "h", 1, "node1", time.Now())
		return err
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := applyUpdates(ctx, tx, updates)
		if err != nil {
			return err
		}

		id, err := CreateInstance(ctx, tx, "default", shapeID, "rollout1", "h", 1, "node1", time.Now())
		if err != nil {
			return err
		}

		err = SetInstanceKeepsRolloutSize(ctx, tx, id)
		if err != nil {
			return err
		}

		rows, err := GetInstances(ctx, tx, InstanceFilter{ShapeID: shapeID})
		if err != nil || len(rows) != 2 || !rows[0].SizesRollout || rows[1].SizesRollout {
			t.Fatalf("old must size the rollout, rollout1 not: %+v %v", rows, err)
		}

		return nil
	})
}
