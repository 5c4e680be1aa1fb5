package db

import (
	"context"
	"database/sql"
	"reflect"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A shape's schedule round-trips through create, read and update; the scheduler's place
// survives an edit of the schedule and is forgotten when the schedule is removed; bounds
// set by an action change nothing else.
func TestShapeScheduleState(t *testing.T) {
	c := newTestCluster(t)
	four, twenty := 4, 20
	schedule := []api.DeploymentShapeScheduledAction{{Name: "business-hours", Cron: "0 8 * * 1-5", TimeZone: "Europe/Paris", ScalingMinimum: &four, ScalingMaximum: &twenty}}
	at := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		put := api.DeploymentShapePut{ScalingMaximum: 5, Schedule: schedule, Description: "web"}
		id, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: put})
		if err != nil {
			return err
		}

		_, err = CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "db"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 1}})
		if err != nil {
			return err
		}

		web, err := GetShape(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		if !reflect.DeepEqual(web.Schedule, schedule) {
			t.Errorf("schedule read back as %+v", web.Schedule)
		}

		states, err := GetScheduleStates(ctx, tx, 0)
		if err != nil {
			return err
		}

		if len(states) != 1 || states[0].Shape != "web" || states[0].CheckedAt != nil {
			t.Fatalf("states: %+v", states)
		}

		err = SetScheduleChecked(ctx, tx, id, at)
		if err != nil {
			return err
		}

		err = SetScheduleFired(ctx, tx, id, "business-hours", at)
		if err != nil {
			return err
		}

		err = SetShapeBounds(ctx, tx, id, 4, 20)
		if err != nil {
			return err
		}

		put.Schedule[0].Cron = "0 9 * * 1-5"
		put.ScalingMinimum, put.ScalingMaximum = 4, 20
		err = UpdateShape(ctx, tx, id, put)
		if err != nil {
			return err
		}

		states, err = GetScheduleStates(ctx, tx, id)
		if err != nil {
			return err
		}

		if len(states) != 1 || states[0].CheckedAt == nil || !states[0].CheckedAt.Equal(at) || states[0].LastAction != "business-hours" || !states[0].LastAt.Equal(at) || states[0].Schedule[0].Cron != "0 9 * * 1-5" {
			t.Fatalf("after an edit: %+v", states)
		}

		put.Schedule = nil
		err = UpdateShape(ctx, tx, id, put)
		if err != nil {
			return err
		}

		states, err = GetScheduleStates(ctx, tx, id)
		if err != nil {
			return err
		}

		if len(states) != 1 || states[0].CheckedAt != nil || len(states[0].Schedule) != 0 {
			t.Fatalf("after removal: %+v", states)
		}

		web, err = GetShape(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		if web.ScalingMinimum != 4 || web.ScalingMaximum != 20 || web.Description != "web" || web.Schedule != nil {
			t.Errorf("shape after: %+v", web.DeploymentShapePut)
		}

		return nil
	})
}
