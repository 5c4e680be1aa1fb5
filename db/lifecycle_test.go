package db

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A database made before instance lifecycles upgrades with its shapes and instances
// intact: no health object, unknown health, no hook, an empty pool.
func TestUpdateAddInstanceLifecycleKeepsData(t *testing.T) {
	c, err := openNode(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close(context.Background()) })
	before := map[int]update{}
	for v := 1; v <= 6; v++ {
		before[v] = updates[v]
	}

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := applyUpdates(ctx, tx, before)
		if err != nil {
			return err
		}

		_, err = tx.ExecContext(ctx, `
INSERT INTO deployments (id, project, name) VALUES (1, 'default', 'dep1');
INSERT INTO deployments_shapes (id, deployment_id, name, instance_template, scaling_minimum, scaling_maximum) VALUES (1, 1, 'web', '{}', 0, 3);
INSERT INTO deployments_shapes_instances (deployment_shape_id, name, state, created_at) VALUES (1, 'web1', 'created', '2026-11-22 19:00:00');
`)
		return err
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error { return applyUpdates(ctx, tx, updates) })
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		shapes, err := GetShapes(ctx, tx, ShapeFilter{})
		if err != nil {
			return err
		}

		if len(shapes) != 1 || shapes[0].Health != nil || shapes[0].Hooks != nil || shapes[0].WarmPool != nil || shapes[0].Status != api.ShapeStatusOK || shapes[0].ScalingCurrent != 1 {
			t.Fatalf("shape after the upgrade: %+v", shapes)
		}

		rows, err := GetInstances(ctx, tx, InstanceFilter{})
		if err != nil {
			return err
		}

		if len(rows) != 1 || rows[0].Health.Status != api.HealthUnknown || rows[0].Hook.Hook != "" || rows[0].Health.CheckedAt != nil {
			t.Fatalf("instance after the upgrade: %+v", rows)
		}

		pool, err := GetPoolInstances(ctx, tx, 0)
		if err != nil || len(pool) != 0 {
			t.Fatalf("pool after the upgrade: %v %v", pool, err)
		}

		return nil
	})
}

// Shapes keep their lifecycle objects; replacing instances leave the count, draining ones
// stay in it; a degraded shape says so; the pool hands out only current, ready instances.
func TestShapeLifecycleRecords(t *testing.T) {
	c := newTestCluster(t)
	now := time.Now()
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		put := api.DeploymentShapePut{
			ScalingMaximum: 5,
			Health:         &api.DeploymentShapeHealth{Command: []string{"true"}, Replace: true},
			Hooks:          &api.DeploymentShapeHooks{TerminateTimeout: "1m"},
			WarmPool:       &api.DeploymentShapeWarmPool{Size: 2},
		}

		shapeID, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: put})
		if err != nil {
			return err
		}

		ids := map[string]int64{}
		for _, name := range []string{"a", "b", "c"} {
			ids[name], err = CreateInstance(ctx, tx, "default", shapeID, name, "h1", 1, "node1", now)
			if err != nil {
				return err
			}

			err = SetInstanceState(ctx, tx, ids[name], InstanceCreating, InstanceCreated, "node1", now)
			if err != nil {
				return err
			}
		}

		err = SetInstanceState(ctx, tx, ids["a"], InstanceCreated, InstanceReplacing, "node1", now)
		if err != nil {
			return err
		}

		deadline := now.Add(time.Minute).UTC()
		err = SetInstanceHook(ctx, tx, ids["b"], api.LifecycleTerminatingWait, &deadline)
		if err != nil {
			return err
		}

		if SetInstanceHookAction(ctx, tx, ids["b"], api.LifecycleLaunchingWait, "continue", &deadline) != ErrInstanceChanged {
			t.Fatal("an action on another hook than the one waited in must be refused")
		}

		err = SetShapeReplaceFailures(ctx, tx, shapeID, 3, "gave up")
		if err != nil {
			return err
		}

		for i, hash := range []string{"old", "h1"} {
			row, err := CreatePoolInstance(ctx, tx, shapeID, []string{"web-w1", "web-w2"}[i], hash, "node1", now)
			if err != nil {
				return err
			}

			err = SetPoolInstanceReady(ctx, tx, row)
			if err != nil {
				return err
			}
		}

		_, err = CreatePoolInstance(ctx, tx, shapeID, "web-w3", "h1", "node1", now)
		if err != nil {
			return err
		}

		shape, err := GetShape(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		if shape.ScalingCurrent != 2 || shape.Replacing != 1 || shape.Terminating != 1 || shape.WarmPoolReady != 2 ||
			shape.Status != api.ShapeStatusDegraded || shape.StatusReason != "gave up" || shape.ReplaceFailures != 3 ||
			shape.Health == nil || !shape.Health.Replace || shape.Hooks.TerminateTimeout != "1m" || shape.WarmPool.Size != 2 {
			t.Fatalf("shape: %+v", shape)
		}

		taken, err := TakePoolInstance(ctx, tx, shapeID, "h1", "node1", now)
		if err != nil || taken == nil || taken.Name != "web-w2" {
			t.Fatalf("take: %+v %v", taken, err)
		}

		taken, err = TakePoolInstance(ctx, tx, shapeID, "h1", "node1", now)
		if err != nil || taken != nil {
			t.Fatalf("only ready pool instances of the current template are taken: %+v %v", taken, err)
		}

		// A change to the shape clears degraded.
		err = UpdateShape(ctx, tx, shapeID, shape.Writable())
		if err != nil {
			return err
		}

		shape, err = GetShape(ctx, tx, deploymentID, "web")
		if err != nil || shape.Status != api.ShapeStatusOK || shape.ReplaceFailures != 0 {
			t.Fatalf("after an update: %+v %v", shape, err)
		}

		// Without checks, verdicts are forgotten.
		checked := now.UTC()
		err = SetInstanceHealth(ctx, tx, ids["c"], InstanceHealth{Status: api.HealthUnhealthy, Output: "boom", CheckedAt: &checked, Streak: -3})
		if err != nil {
			return err
		}

		put = shape.Writable()
		put.Health = nil
		err = UpdateShape(ctx, tx, shapeID, put)
		if err != nil {
			return err
		}

		rows, err := GetInstances(ctx, tx, InstanceFilter{Name: "c"})
		if err != nil || rows[0].Health.Status != api.HealthUnknown || rows[0].Health.CheckedAt != nil {
			t.Fatalf("health after the checks were removed: %+v %v", rows, err)
		}

		return nil
	})
}
