package webhooks

import (
	"context"
	"database/sql"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// TestMetricsEventCountsEveryState holds the governor's metrics event to rules.Counted and
// to scaling_current as the database counts it, over the cases of db's
// TestRulesSQLAgreeWithGo (every state, hook wait, health and revision): each shape lists
// its instance exactly when the instance counts.
func TestMetricsEventCountsEveryState(t *testing.T) {
	cluster := dbtest.Open(t)
	cases := dbtest.WriteInstanceCases(t, cluster, dbtest.InstanceCases())
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
