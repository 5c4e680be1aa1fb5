package db

import (
	"context"
	"database/sql"
	"net/http"
	"reflect"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A shape's traffic round-trips through create, read and update, and goes when removed;
// two shapes may not share a listen address (however written) or an operator backend.
func TestShapeTraffic(t *testing.T) {
	c := newTestCluster(t)
	traffic := &api.DeploymentShapeTraffic{Port: 80, Protocol: "http", Listen: "127.0.0.1:8080", DrainTimeout: "30s"}
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		put := api.DeploymentShapePut{ScalingMaximum: 5, Traffic: traffic}
		webID, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: put})
		if err != nil {
			return err
		}

		web, err := GetShape(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		n, err := CountShapesWithTraffic(ctx, tx)
		if err != nil || n != 1 {
			t.Fatalf("%d shapes with traffic (%v)", n, err)
		}

		if !reflect.DeepEqual(web.Traffic, traffic) {
			t.Errorf("traffic read back as %+v", web.Traffic)
		}

		// The same address, written another way, on another shape.
		clash := api.DeploymentShapePut{ScalingMaximum: 1, Traffic: &api.DeploymentShapeTraffic{Port: 81, Listen: "[::ffff:127.0.0.1]:8080"}}
		_, err = CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "clash"}, DeploymentShapePut: clash})
		if !lxdapi.StatusErrorCheck(err, http.StatusConflict) {
			t.Fatalf("a second shape on the same address: %v", err)
		}

		apiID, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "api"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 1}})
		if err != nil {
			return err
		}

		err = UpdateShape(ctx, tx, apiID, clash)
		if !lxdapi.StatusErrorCheck(err, http.StatusConflict) {
			t.Fatalf("an update onto a taken address: %v", err)
		}

		err = UpdateShape(ctx, tx, apiID, api.DeploymentShapePut{ScalingMaximum: 1, Traffic: &api.DeploymentShapeTraffic{Port: 80, Backend: "api_servers"}})
		if err != nil {
			return err
		}

		err = UpdateShape(ctx, tx, webID, api.DeploymentShapePut{ScalingMaximum: 5, Traffic: &api.DeploymentShapeTraffic{Port: 80, Backend: "api_servers"}})
		if !lxdapi.StatusErrorCheck(err, http.StatusConflict) {
			t.Fatalf("two shapes filling one backend: %v", err)
		}

		// A shape keeps its own address across an update.
		err = UpdateShape(ctx, tx, webID, put)
		if err != nil {
			t.Fatalf("a shape updated onto its own address: %v", err)
		}

		err = UpdateShape(ctx, tx, webID, api.DeploymentShapePut{ScalingMaximum: 5})
		if err != nil {
			return err
		}

		web, err = GetShape(ctx, tx, deploymentID, "web")
		if err != nil || web.Traffic != nil {
			t.Fatalf("removed traffic read back as %+v (%v)", web.Traffic, err)
		}

		return nil
	})
}

// An instance's drain deadline is stored, read back as the same time, and cleared.
func TestInstanceDrain(t *testing.T) {
	c := newTestCluster(t)
	until := time.Date(2026, 11, 27, 23, 0, 30, 0, time.UTC)
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		shapeID, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 5}})
		if err != nil {
			return err
		}

		id, err := CreateInstance(ctx, tx, "default", shapeID, "web1", "", 1, "me", time.Now())
		if err != nil {
			return err
		}

		drains, err := GetInstanceDrains(ctx, tx)
		if err != nil || len(drains) != 0 {
			t.Fatalf("a new instance drains: %v %v", drains, err)
		}

		err = SetInstanceDrain(ctx, tx, id, &until)
		if err != nil {
			return err
		}

		drains, err = GetInstanceDrains(ctx, tx)
		if err != nil || !drains[id].Equal(until) {
			t.Fatalf("drain read back as %v (%v), want %v", drains, err, until)
		}

		one, err := GetInstanceDrain(ctx, tx, id)
		if err != nil || one == nil || !one.Equal(until) {
			t.Fatalf("one drain read back as %v (%v), want %v", one, err, until)
		}

		err = SetInstanceDrain(ctx, tx, id, nil)
		if err != nil {
			return err
		}

		drains, err = GetInstanceDrains(ctx, tx)
		if err != nil || len(drains) != 0 {
			t.Fatalf("a cleared drain: %v %v", drains, err)
		}

		one, err = GetInstanceDrain(ctx, tx, id)
		if err != nil || one != nil {
			t.Fatalf("one cleared drain: %v %v", one, err)
		}

		return nil
	})
}

// Shapes and instances from before updateAddTraffic have no traffic and no drain.
func TestUpdateAddTraffic(t *testing.T) {
	c, err := openNode(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close(context.Background()) })
	before := map[int]update{}
	for v := 1; v < 21; v++ {
		before[v] = updates[v]
	}

	var deploymentID int64
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := applyUpdates(ctx, tx, before)
		if err != nil {
			return err
		}

		deploymentID, err = CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		_, err = tx.ExecContext(ctx, "INSERT INTO deployments_shapes (deployment_id, name, description, instance_template, scaling_minimum, scaling_maximum, rollout) VALUES (?, 'web', '', '{}', 0, 3, '{}')", deploymentID)
		return err
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := applyUpdates(ctx, tx, updates)
		if err != nil {
			return err
		}

		shape, err := GetShape(ctx, tx, deploymentID, "web")
		if err != nil || shape.Traffic != nil {
			t.Fatalf("an old shape has no traffic: %+v %v", shape, err)
		}

		drains, err := GetInstanceDrains(ctx, tx)
		if err != nil || len(drains) != 0 {
			t.Fatalf("old instances drain: %v %v", drains, err)
		}

		return nil
	})
}
