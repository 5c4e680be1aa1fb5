package main

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

const boundedShapeBody = `{"name":"web","instance_template":{"source":{"type":"image","alias":"busybox"},"config":{"limits.memory":"128MiB"}},
 "scaling_maximum":3,"rollout":{"trigger":"config-change"},
 "resource_bounds":{"limits.memory":{"minimum":"64MiB","maximum":"512MiB"},"limits.cpu":{"minimum":"1","maximum":"2"}}}`

func TestResizeAPI(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", boundedShapeBody, 201, "")

	// The bounds are validated with the shape, and hold its template.
	a.expect("POST", "/1.0/deployments/dep1/shapes", `{"name":"s2","scaling_maximum":1,"instance_template":{"config":{"limits.memory":"1GiB"}},"resource_bounds":{"limits.memory":{"maximum":"512MiB"}}}`, 400, "above the shape's resource_bounds maximum")
	a.expect("POST", "/1.0/deployments/dep1/shapes", `{"name":"s2","scaling_maximum":1,"resource_bounds":{"limits.memory":{"maximum":"50%"}}}`, 400, "percentage")
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"resource_bounds":{"limits.memory":{"maximum":"1GiB"}}}`, 200, "")
	shape := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
	memory := shape["resource_bounds"].(map[string]any)["limits.memory"].(map[string]any)
	if memory["minimum"] != "64MiB" || memory["maximum"] != "1GiB" {
		t.Fatalf("a PATCH of one end keeps the other: %v", memory)
	}

	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"resource_bounds":{"limits.memory":{"maximum":"512MiB"}}}`, 200, "")

	// Bad bodies are refused before LXD is asked; without LXD the resize is a 503 and
	// records nothing.
	a.expect("PUT", "/1.0/deployments/dep1/shapes/web/resources", `{"limits.memory":`, 400, "")
	a.expect("PUT", "/1.0/deployments/dep1/shapes/web/resources", `{"limits.gpu":"1"}`, 400, "")
	a.expect("PUT", "/1.0/deployments/dep1/shapes/web/resources", `{"limits.memory":"256MiB"}`, 503, "LXD is unavailable")

	resize := func(req api.DeploymentShapeResourcesPut) (int, error) {
		var revision int
		err := a.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			var err error
			_, revision, err = rollout.Resize(ctx, tx, refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: "default", Name: "dep1"}, Shape: "web"}, req, api.DeploymentRequestor{Name: "admin", Protocol: "unix"}, true)
			return err
		})
		return revision, err
	}

	revisionNow := func() int {
		shape := a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")["metadata"].(map[string]any)
		return int(shape["revision"].(float64))
	}

	before := revisionNow()
	_, err := resize(api.DeploymentShapeResourcesPut{Memory: "1GiB"})
	if !lxdapi.StatusErrorCheck(err, http.StatusConflict) || !strings.Contains(err.Error(), `raise resource_bounds["limits.memory"].maximum`) {
		t.Fatalf("a resize above the maximum: %v", err)
	}

	_, err = resize(api.DeploymentShapeResourcesPut{CPU: "3"})
	if !lxdapi.StatusErrorCheck(err, http.StatusConflict) || !strings.Contains(err.Error(), "limits.cpu 3 is above") {
		t.Fatalf("a resize above the CPU maximum: %v", err)
	}

	if revisionNow() != before {
		t.Fatal("a refused resize recorded a revision")
	}

	revision, err := resize(api.DeploymentShapeResourcesPut{Memory: "256MiB", CPU: "2", Reason: "busy"})
	if err != nil || revision != before+1 {
		t.Fatalf("resize: revision %d, %v", revision, err)
	}

	var rev *api.DeploymentShapeRevision
	var rollouts []db.Rollout
	err = a.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := refs.ShapeInTx(ctx, tx, refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: "default", Name: "dep1"}, Shape: "web"})
		if err != nil {
			return err
		}

		rev, err = db.GetRevision(ctx, tx, shape.ID, revision)
		if err != nil {
			return err
		}

		rollouts, err = db.GetRollouts(ctx, tx, db.RolloutFilter{ShapeID: shape.ID})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	if rev.Cause != "resize" || rev.Notes != "busy" || rev.Requestor.Name != "admin" || rev.Shape.InstanceTemplate.Config["limits.memory"] != "256MiB" || rev.Shape.InstanceTemplate.Config["limits.cpu"] != "2" {
		t.Fatalf("revision %+v", rev)
	}

	for _, r := range rollouts {
		if r.Revision == revision {
			t.Fatalf("a resize started a rollout despite trigger config-change: %+v", r)
		}
	}
}
