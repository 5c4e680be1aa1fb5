package dbtest

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// WriteInstanceCases writes deployment "every" in project default with one shape per case
// (health checks on, latest revision 2), each holding the case's one instance on LXD
// member m1, and returns the cases with where they were written. Tests only: outside them only
// the fleet writes instance records (fleet's TestDoneCheck leaves this test-helper package out).
func WriteInstanceCases(t testing.TB, c *db.Cluster, cases []InstanceCase) []InstanceCase {
	t.Helper()
	now := time.Now()
	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		depID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "every"}})
		if err != nil {
			return err
		}

		for n := range cases {
			k := &cases[n]
			put := api.DeploymentShapePut{ScalingMaximum: 3, Health: &api.DeploymentShapeHealth{Command: []string{"true"}}}
			shapeID, err := db.CreateShape(ctx, tx, depID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: k.Shape}, DeploymentShapePut: put})
			if err != nil {
				return err
			}

			err = db.SetShapeRevision(ctx, tx, shapeID, k.Latest)
			if err != nil {
				return err
			}

			k.DeploymentID, k.ShapeID = depID, shapeID
			revision := k.Latest
			if k.Outdated {
				revision--
			}

			id, err := db.CreateInstance(ctx, tx, k.Project, shapeID, k.Name, "h", revision, "test", now)
			if err != nil {
				return err
			}

			// Hooks, health and location are recorded on created instances; the state
			// moves last.
			err = db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "test", now)
			if err != nil {
				return err
			}

			err = db.SetInstanceHealth(ctx, tx, id, db.InstanceHealth{Status: k.Health, CheckedAt: &now})
			if err != nil {
				return err
			}

			err = db.MoveInstanceLocation(ctx, tx, id, "", "m1")
			if err != nil {
				return err
			}

			if k.Hook != "" {
				deadline := now.Add(time.Hour)
				err = db.SetInstanceHook(ctx, tx, id, k.Hook, &deadline)
				if err != nil {
					return err
				}
			}

			if k.State != db.InstanceCreated {
				err = db.SetInstanceState(ctx, tx, id, db.InstanceCreated, k.State, "test", now)
				if err != nil {
					return err
				}
			}
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	return cases
}
