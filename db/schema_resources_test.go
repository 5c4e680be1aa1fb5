package db

import (
	"context"
	"database/sql"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Shapes from before updateAddResourceBounds have no resource bounds; afterwards bounds are
// stored and read back with the shape.
func TestUpdateAddResourceBounds(t *testing.T) {
	c, err := openNode(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close(context.Background()) })
	before := map[int]update{}
	for v := 1; v < 14; v++ {
		before[v] = updates[v]
	}

	var deploymentID, shapeID int64
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := applyUpdates(ctx, tx, before)
		if err != nil {
			return err
		}

		deploymentID, err = CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		res, err := tx.ExecContext(ctx, "INSERT INTO deployments_shapes (deployment_id, name, description, instance_template, scaling_minimum, scaling_maximum, rollout) VALUES (?, 'web', '', '{}', 0, 3, '{}')", deploymentID)
		if err != nil {
			return err
		}

		shapeID, err = res.LastInsertId()
		return err
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := applyUpdates(ctx, tx, updates)
		if err != nil {
			return err
		}

		shape, err := GetShape(ctx, tx, deploymentID, "web")
		if err != nil || shape.ResourceBounds != nil {
			t.Fatalf("an old shape has no bounds: %+v %v", shape, err)
		}

		put := shape.Writable()
		put.ResourceBounds = map[string]api.DeploymentShapeResourceBound{api.LimitMemory: {Minimum: "64MiB", Maximum: "512MiB"}}
		err = UpdateShape(ctx, tx, shapeID, put)
		if err != nil {
			return err
		}

		shape, err = GetShape(ctx, tx, deploymentID, "web")
		if err != nil || shape.ResourceBounds[api.LimitMemory].Maximum != "512MiB" {
			t.Fatalf("bounds not read back: %+v %v", shape, err)
		}

		return nil
	})
}
