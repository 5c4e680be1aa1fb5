package db

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestSetInstancesHealth records several results in one statement and reads each back as
// written (a check time read as a time, none as none), and refuses a batch naming an
// instance that is no longer created.
func TestSetInstancesHealth(t *testing.T) {
	c := newTestCluster(t)
	at := time.Date(2026, 11, 25, 3, 4, 5, 123456789, time.FixedZone("x", 3600))
	want := map[string]InstanceHealth{
		"a": {Status: api.HealthHealthy, Output: "it's \"fine\"\n", CheckedAt: &at, Streak: 3, ExitCode: 0},
		"b": {Status: api.HealthUnhealthy, Output: "", CheckedAt: &at, Streak: -2, Replacement: true, ExitCode: -1},
		"c": {Status: api.HealthUnknown, Output: "", Streak: 0},
	}

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		shapeID, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 5}})
		if err != nil {
			return err
		}

		records := map[int64]InstanceHealth{}
		for _, name := range []string{"a", "b", "c", "creating"} {
			id, err := CreateInstance(ctx, tx, "default", shapeID, name, "h1", 1, "node1", at)
			if err != nil {
				return err
			}

			if name == "creating" {
				err = SetInstancesHealth(ctx, tx, map[int64]InstanceHealth{id: want["a"], id - 1: want["a"]})
				if !errors.Is(err, ErrInstanceChanged) {
					t.Fatalf("a batch naming an instance still creating: %v, want ErrInstanceChanged", err)
				}

				continue
			}

			err = SetInstanceState(ctx, tx, id, InstanceCreating, InstanceCreated, "node1", at)
			if err != nil {
				return err
			}

			records[id] = want[name]
		}

		return SetInstancesHealth(ctx, tx, records)
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := GetInstances(ctx, tx, InstanceFilter{State: InstanceCreated})
		if err != nil {
			return err
		}

		for _, row := range rows {
			w, got := want[row.Name], row.Health
			if got.Status != w.Status || got.Output != w.Output || got.Streak != w.Streak || got.Replacement != w.Replacement || got.ExitCode != w.ExitCode {
				t.Errorf("%s: %+v, want %+v", row.Name, got, w)
			}

			if (got.CheckedAt == nil) != (w.CheckedAt == nil) || (got.CheckedAt != nil && !got.CheckedAt.Equal(*w.CheckedAt)) {
				t.Errorf("%s: checked at %v, want %v", row.Name, got.CheckedAt, w.CheckedAt)
			}
		}

		return nil
	})
}
