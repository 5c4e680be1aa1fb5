package webhooks

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// TestMetricsEventCountsEveryState holds the governor's metrics event to rules.Counted and
// to scaling_current as the database counts it, over the cases of db's
// TestRulesSQLAgreeWithGo (every state, hook wait, health and revision): each shape lists
// its instance exactly when the instance counts.
func TestMetricsEventCountsEveryState(t *testing.T) {
	cluster := dbtest.Open(t)
	cases := writeCases(t, cluster, dbtest.InstanceCases())
	var d *db.Deployment
	var rows []db.Instance
	err := cluster.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		var err error
		d, err = db.GetDeployment(ctx, tx, "default", "every")
		if err != nil {
			return err
		}

		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{DeploymentID: d.ID})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	c := &Collector{previous: map[string]timedSample{}}
	event := c.metadata(*d, rows, map[string]Sample{})
	if len(event.Shapes) != len(cases) {
		t.Fatalf("%d shapes in the event for %d cases", len(event.Shapes), len(cases))
	}

	for _, k := range cases {
		shape := event.Shapes[k.Shape]
		_, listed := shape.Instances[k.Name]
		if listed != rules.Counted(k.State) {
			t.Errorf("%s: listed %v, counted %v", k, listed, rules.Counted(k.State))
		}

		if len(shape.Instances) != shape.ScalingCurrent {
			t.Errorf("%s: %d instances listed for scaling_current %d", k, len(shape.Instances), shape.ScalingCurrent)
		}
	}
}

// writeCases writes (as db's TestRulesSQLAgreeWithGo does) deployment "every" in project default with one shape per case
// (health checks on, latest revision 2), each holding the case's one instance on LXD
// member m1, and returns the cases with where they were written.
func writeCases(t *testing.T, c *db.Cluster, cases []dbtest.InstanceCase) []dbtest.InstanceCase {
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
