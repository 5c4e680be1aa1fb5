package db

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func testManifest(cause string, shapes ...string) api.DeploymentManifest {
	m := api.DeploymentManifest{
		Cause:       cause,
		InputConfig: "resources: []",
		Imports:     map[string]string{"web.jinja": "resources: []"},
	}

	for _, shape := range shapes {
		m.ExpandedConfig.Resources = append(m.ExpandedConfig.Resources, api.DeploymentManifestResource{Name: shape, Type: "shape", Properties: map[string]any{"scaling_maximum": float64(2)}})
	}

	m.Layout.Resources = []api.DeploymentManifestResource{{Name: "app", Type: "app.jinja", Properties: map[string]any{"n": float64(1)}, Resources: m.ExpandedConfig.Resources}}
	return m
}

func TestManifests(t *testing.T) {
	c := newTestCluster(t)
	var dep1, dep2, other int64
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		for _, d := range []struct {
			id      *int64
			project string
			name    string
		}{{&dep1, "default", "dep1"}, {&dep2, "default", "dep2"}, {&other, "p2", "dep1"}} {
			*d.id, err = CreateDeployment(ctx, tx, d.project, api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: d.name}})
			if err != nil {
				return err
			}
		}

		// No manifest yet.
		latest, err := GetLatestManifest(ctx, tx, dep1)
		if err != nil || latest != nil {
			t.Fatalf("latest manifest of a deployment without any: %v %v", latest, err)
		}

		for i, m := range []api.DeploymentManifest{testManifest("create", "web"), testManifest("update", "web", "db"), testManifest("rollback of manifest-1", "web")} {
			name, err := CreateManifest(ctx, tx, dep1, m)
			if err != nil {
				return err
			}

			if want := "manifest-" + string(rune('1'+i)); name != want {
				t.Errorf("manifest %d named %q, want %q", i, name, want)
			}
		}

		// Numbering is per deployment.
		name, err := CreateManifest(ctx, tx, other, testManifest("create", "api"))
		if err != nil || name != "manifest-1" {
			t.Fatalf("first manifest of another deployment: %q %v", name, err)
		}

		return nil
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		names, err := GetManifestNames(ctx, tx, dep1)
		if err != nil {
			return err
		}

		if !reflect.DeepEqual(names, []string{"manifest-1", "manifest-2", "manifest-3"}) {
			t.Errorf("names = %v", names)
		}

		all, err := GetManifests(ctx, tx, dep1)
		if err != nil {
			return err
		}

		if len(all) != 3 || all[1].Cause != "update" || len(all[1].ExpandedConfig.Resources) != 2 || all[0].CreatedAt.IsZero() {
			t.Errorf("manifests = %+v", all)
		}

		m, err := GetManifest(ctx, tx, dep1, "manifest-2")
		if err != nil {
			return err
		}

		want := testManifest("update", "web", "db")
		if m.InputConfig != want.InputConfig || !reflect.DeepEqual(m.Imports, want.Imports) || !reflect.DeepEqual(m.ExpandedConfig, want.ExpandedConfig) || !reflect.DeepEqual(m.Layout, want.Layout) {
			t.Errorf("manifest-2 does not read back as written: %+v", m)
		}

		_, err = GetManifest(ctx, tx, dep1, "manifest-9")
		expectStatus(t, err, http.StatusNotFound)
		_, err = GetManifest(ctx, tx, dep2, "manifest-1")
		expectStatus(t, err, http.StatusNotFound)

		latest, err := GetLatestManifest(ctx, tx, dep1)
		if err != nil || latest == nil || latest.Name != "manifest-3" || latest.Cause != "rollback of manifest-1" {
			t.Fatalf("latest = %+v, %v", latest, err)
		}

		layouts, err := GetLatestLayouts(ctx, tx, "default")
		if err != nil {
			return err
		}

		// dep2 has no manifest; p2's dep1 is another project.
		if len(layouts) != 1 || layouts[0].Deployment != "dep1" || layouts[0].Manifest != "manifest-3" || len(layouts[0].Layout.Resources[0].Resources) != 1 {
			t.Errorf("latest layouts = %+v", layouts)
		}

		return nil
	})

	// Manifests go with their deployment.
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error { return DeleteDeployment(ctx, tx, dep1) })
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		var count int
		err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM deployments_manifests WHERE deployment_id = ?", dep1).Scan(&count)
		if err == nil && count != 0 {
			t.Errorf("%d manifests outlive their deployment", count)
		}

		return err
	})
}

func TestManifestsArePruned(t *testing.T) {
	c := newTestCluster(t)
	var deploymentID int64
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		deploymentID, err = CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		for i := 0; i < ManifestsKept+5; i++ {
			_, err = CreateManifest(ctx, tx, deploymentID, api.DeploymentManifest{InputConfig: "resources: []", Cause: "update"})
			if err != nil {
				return err
			}
		}

		return nil
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		names, err := GetManifestNames(ctx, tx, deploymentID)
		if err != nil {
			return err
		}

		if len(names) != ManifestsKept {
			t.Fatalf("%d manifests kept, want %d", len(names), ManifestsKept)
		}

		// Numbering continues after pruning.
		name, err := CreateManifest(ctx, tx, deploymentID, api.DeploymentManifest{InputConfig: "resources: []"})
		if err != nil || name != fmt.Sprintf("manifest-%d", ManifestsKept+6) {
			t.Fatalf("next manifest %q, %v", name, err)
		}

		return nil
	})
}
