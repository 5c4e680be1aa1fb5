package apply

import (
	"context"
	"database/sql"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply/applytest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// testBy is who the tests' expansions are for: the requestor package main's handlers name
// outside a request.
var testBy = api.InternalRequestor("unknown")

// TestApplyRefusesShapesWithInstances checks the transaction: a shape the config drops
// that still has instances is a 409, and nothing of the config is applied.
func TestApplyRefusesShapesWithInstances(t *testing.T) {
	ctx := context.Background()
	cluster := dbtest.Open(t)
	imports := map[string]string{"app.jinja": applytest.AppJinja}
	first, err := Expand(ctx, InProcess{}, nil, testBy, "default", "shop", applytest.AppConfig("busybox", "web:3", "db:1"), imports, CauseCreate)
	if err != nil {
		t.Fatal(err)
	}

	var id int64
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err = db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "shop"}})
		if err != nil {
			return err
		}

		err = first.Apply(ctx, tx, id)
		if err != nil {
			return err
		}

		shapeID, err := db.GetShapeID(ctx, tx, id, "shop-db")
		if err != nil {
			return err
		}

		_, err = tx.ExecContext(ctx, "INSERT INTO deployments_shapes_instances (deployment_shape_id, name, state, created_at) VALUES (?, 'db1', 'running', CURRENT_TIMESTAMP)", shapeID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	second, err := Expand(ctx, InProcess{}, nil, testBy, "default", "shop", applytest.AppConfig("busybox", "web:4"), imports, CauseUpdate)
	if err != nil {
		t.Fatal(err)
	}

	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		p, err := second.plan(ctx, tx, id)
		if err != nil {
			return err
		}

		if len(p.delete) != 1 || p.delete[0].instances != 1 || len(p.update) != 1 {
			t.Errorf("plan: %+v", p)
		}

		return second.Apply(ctx, tx, id)
	})
	if code, _ := lxdapi.StatusErrorMatch(err); code != http.StatusConflict || !strings.Contains(err.Error(), "force") {
		t.Fatalf("applying over a shape with instances: %v", err)
	}

	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		shapes, err := db.GetShapes(ctx, tx, db.ShapeFilter{DeploymentID: id})
		if err != nil {
			return err
		}

		names, err := db.GetManifestNames(ctx, tx, id)
		if len(shapes) != 2 || shapes[1].ScalingMaximum != 3 || len(names) != 1 || shapes[0].ScalingCurrent != 1 {
			t.Errorf("a refused apply changed something: %+v, manifests %v", shapes, names)
		}

		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestDaemonFetchesFromConfiguredRegistries: a config may name a template of a registry the
// daemon is configured with (--template-registry); nothing else is fetched.
func TestDaemonFetchesFromConfiguredRegistries(t *testing.T) {
	dir := t.TempDir()
	err := os.MkdirAll(filepath.Join(dir, "web", "v1.0.2"), 0o755)
	if err != nil {
		t.Fatal(err)
	}

	template := "resources:\n- name: {{ env['name'] }}\n  type: shape\n  properties:\n    scaling_maximum: 2\n    instance_template:\n      source: {type: image, alias: busybox}\n"
	err = os.WriteFile(filepath.Join(dir, "web", "v1.0.2", "web.jinja"), []byte(template), 0o644)
	if err != nil {
		t.Fatal(err)
	}

	fetcher := &registry.Fetcher{Registries: map[string]string{"github.com/acme/templates": dir}}
	config := "resources:\n- name: front\n  type: github.com/acme/templates/web:v1.0\n"
	applied, err := Expand(context.Background(), InProcess{}, fetcher, testBy, "default", "shop", config, nil, CauseCreate)
	if err != nil {
		t.Fatal(err)
	}

	if _, ok := applied.shapes["front"]; !ok {
		t.Fatalf("shapes from the registry template: %+v", applied.shapes)
	}

	// Without the registry configured, the same config is refused.
	_, err = Expand(context.Background(), InProcess{}, nil, testBy, "default", "shop", config, nil, CauseCreate)
	if err == nil {
		t.Fatal("a registry reference must not be fetched when no registry is configured")
	}

	other := "resources:\n- name: front\n  type: github.com/evil/templates/web:v1\n"
	_, err = Expand(context.Background(), InProcess{}, fetcher, testBy, "default", "shop", other, nil, CauseCreate)
	if err == nil {
		t.Fatal("an unlisted registry must be refused")
	}
}
