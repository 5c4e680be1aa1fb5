package deployments

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

var dep1 = refs.DeploymentRef{Project: "default", Name: "dep1"}

func newDeployment(t *testing.T, cluster *db.Cluster) int64 {
	t.Helper()
	id, secret, err := Create(context.Background(), cluster, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}, nil)
	if err != nil || id == 0 || len(secret) != 64 {
		t.Fatalf("create: id %d, secret %q, %v", id, secret, err)
	}

	return id
}

// TestDeploymentWrites: a create stores the deployment and its secret and runs apply in
// its transaction; bad names and fields are 400s before anything is stored; an update
// takes what edit makes of the current fields; a rename moves the deployment.
func TestDeploymentWrites(t *testing.T) {
	cluster := dbtest.Open(t)
	ctx := context.Background()
	_, _, err := Create(ctx, cluster, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "bad name"}}, nil)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
		t.Fatalf("a bad name: %v", err)
	}

	refused := errors.New("refused")
	_, _, err = Create(ctx, cluster, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}, func(ctx context.Context, tx *sql.Tx, id int64) error { return refused })
	if !errors.Is(err, refused) {
		t.Fatalf("apply's error: %v", err)
	}

	names, err := Names(ctx, cluster, "default")
	if err != nil || len(names) != 0 {
		t.Fatalf("a create whose apply failed left %v (%v)", names, err)
	}

	id := newDeployment(t, cluster)
	updated, err := Update(ctx, cluster, dep1, func(current api.DeploymentPut) (api.DeploymentPut, error) {
		current.Description = "web shop"
		return current, nil
	}, nil)
	if err != nil || updated != id {
		t.Fatalf("update: %d, %v", updated, err)
	}

	d, err := Get(ctx, cluster, dep1)
	if err != nil || d.Description != "web shop" || d.Config == nil {
		t.Fatalf("after the update: %+v, %v", d, err)
	}

	_, err = Update(ctx, cluster, dep1, func(current api.DeploymentPut) (api.DeploymentPut, error) { return current, refused }, nil)
	if !errors.Is(err, refused) {
		t.Fatalf("edit's error: %v", err)
	}

	_, err = Rename(ctx, cluster, dep1, "-bad")
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
		t.Fatalf("a rename to a bad name: %v", err)
	}

	renamed, err := Rename(ctx, cluster, dep1, "dep2")
	if err != nil || renamed != id {
		t.Fatalf("rename: %d, %v", renamed, err)
	}

	rows, err := List(ctx, cluster, "")
	if err != nil || len(rows) != 1 || rows[0].Name != "dep2" {
		t.Fatalf("listing after the rename: %v, %v", rows, err)
	}

	_, err = Get(ctx, cluster, dep1)
	if !lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		t.Fatalf("the old name: %v", err)
	}
}

// TestShapeWrites: a shape is created with its first revision, an update records the
// next one and says what it changed from, and a rename keeps the shape.
func TestShapeWrites(t *testing.T) {
	cluster := dbtest.Open(t)
	ctx := context.Background()
	id := newDeployment(t, cluster)
	args := rollout.RevisionArgs{Cause: rollout.CauseAPI, By: api.DeploymentRequestor{Name: "admin", Protocol: "unix"}}
	web := api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 3}}
	_, err := CreateShape(ctx, cluster, dep1, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "a b"}}, args)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
		t.Fatalf("a bad shape name: %v", err)
	}

	created, err := CreateShape(ctx, cluster, dep1, web, args)
	if err != nil || created != id {
		t.Fatalf("create shape: %d, %v", created, err)
	}

	ref := refs.ShapeRef{DeploymentRef: dep1, Shape: "web"}
	out, err := UpdateShape(ctx, cluster, ref, func(current api.DeploymentShapePut) (api.DeploymentShapePut, error) {
		current.ScalingMaximum = 5
		return current, nil
	}, args)
	if err != nil || out.DeploymentID != id || out.Before.ScalingMaximum != 3 || out.After.ScalingMaximum != 5 {
		t.Fatalf("update shape: %+v, %v", out, err)
	}

	_, err = UpdateShape(ctx, cluster, ref, func(current api.DeploymentShapePut) (api.DeploymentShapePut, error) {
		current.ScalingMinimum = 9
		return current, nil
	}, args)
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
		t.Fatalf("a minimum above the maximum: %v", err)
	}

	shape, err := GetShape(ctx, cluster, ref)
	if err != nil || shape.ScalingMaximum != 5 || shape.Revision != out.Revised.Revision {
		t.Fatalf("after the update: %+v, %v", shape, err)
	}

	_, err = RenameShape(ctx, cluster, ref, "api")
	if err != nil {
		t.Fatal(err)
	}

	shapes, err := Shapes(ctx, cluster, dep1)
	if err != nil || len(shapes) != 1 || shapes[0].Name != "api" || shapes[0].ID != shape.ID {
		t.Fatalf("shapes after the rename: %v, %v", shapes, err)
	}

	_, manifests, err := Manifests(ctx, cluster, dep1, false)
	if err != nil || manifests == nil || len(manifests) != 0 {
		t.Fatalf("a deployment without a template has no manifests, as an empty list: %v, %v", manifests, err)
	}
}
