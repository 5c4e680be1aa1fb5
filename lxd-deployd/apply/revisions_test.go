package apply

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply/applytest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestTemplateApplyMakesRevisions checks that templated configs revision the shapes they
// create and change, with the manifest as cause, and leave unchanged shapes alone.
func TestTemplateApplyMakesRevisions(t *testing.T) {
	ctx := context.Background()
	cluster := dbtest.Open(t)
	imports := map[string]string{"app.jinja": applytest.AppJinja}
	var id int64
	for i, config := range []string{applytest.AppConfig("busybox", "web:3", "db:1"), applytest.AppConfig("alpine", "web:3", "db:1")} {
		applied, err := Expand(ctx, InProcess{}, nil, testBy, "default", "shop", config, imports, CauseCreate)
		if err != nil {
			t.Fatal(err)
		}

		err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			if i == 0 {
				id, err = db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "shop"}})
				if err != nil {
					return err
				}
			}

			return applied.Apply(ctx, tx, id)
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		shape, err := db.GetShape(ctx, tx, id, "shop-web")
		if err != nil {
			return err
		}

		revisions, err := db.GetRevisions(ctx, tx, shape.ID, 0)
		if err != nil {
			return err
		}

		if len(revisions) != 2 || revisions[1].Cause != "apply manifest-1" || revisions[0].Cause != "apply manifest-2" || revisions[0].Shape.InstanceTemplate.Source.Alias != "alpine" {
			t.Fatalf("revisions: %+v", revisions)
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestTemplatedRolloutSettings checks that a templated config carries a shape's rollout
// settings, counts given as numbers or percentages.
func TestTemplatedRolloutSettings(t *testing.T) {
	config := `resources:
- name: web
  type: shape
  properties:
    instance_template: {source: {type: image, alias: busybox}}
    scaling_maximum: 3
    rollout: {max_surge: 2, max_unavailable: "25%", strategy: canary, canary: {count: 1}, trigger: config-change}
`
	applied, err := Expand(context.Background(), InProcess{}, nil, testBy, "default", "shop", config, nil, CauseCreate)
	if err != nil {
		t.Fatal(err)
	}

	r := applied.shapes["web"].Rollout
	if r.MaxSurge != "2" || r.MaxUnavailable != "25%" || r.Strategy != "canary" || r.Canary == nil || r.Canary.Count != 1 || r.Trigger != "config-change" {
		t.Fatalf("rollout settings: %+v", r)
	}

	_, err = Expand(context.Background(), InProcess{}, nil, testBy, "default", "shop", strings.Replace(config, "strategy: canary", "strategy: sideways", 1), nil, CauseCreate)
	if err == nil || !strings.Contains(err.Error(), "rollout.strategy") {
		t.Fatalf("a bad strategy must be refused naming the field: %v", err)
	}
}
