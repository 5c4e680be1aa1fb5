package db_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestShapeHealthStatus: the counts autohealing's holds weigh, and the shape's
// health_status as the hold and the check's state were recorded.
func TestShapeHealthStatus(t *testing.T) {
	cluster := dbtest.Open(t)
	ctx := context.Background()
	checks := &api.DeploymentShapeHealth{Command: []string{"true"}, Replace: true}
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		depID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		shapeID, err := db.CreateShape(ctx, tx, depID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 4, Health: checks}})
		if err != nil {
			return err
		}

		for i := range 4 {
			id, err := db.CreateInstance(ctx, tx, "default", shapeID, fmt.Sprintf("web%d", i), "hash", 1, "me", time.Now())
			if err != nil {
				return err
			}

			err = db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "me", time.Now())
			if err != nil {
				return err
			}

			status := api.HealthHealthy
			if i < 3 {
				status = api.HealthUnhealthy
			}

			err = db.SetInstanceHealth(ctx, tx, id, db.InstanceHealth{Status: status, Stale: "LXD did not answer", CannotStart: i == 0})
			if err != nil {
				return err
			}
		}

		counts, err := db.GetHealthByLocation(ctx, tx, []int64{shapeID})
		if err != nil {
			return err
		}

		if got := counts[shapeID][""]; got.Created != 4 || got.Unhealthy != 3 {
			t.Errorf("counts %+v, want 4 created, 3 unhealthy", got)
		}

		rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shapeID})
		if err != nil {
			return err
		}

		if rows[0].Health.Stale != "LXD did not answer" || !rows[0].Health.CannotStart || rows[1].Health.CannotStart {
			t.Errorf("the records lost staleness or cannot-start: %+v, %+v", rows[0].Health, rows[1].Health)
		}

		s, err := db.GetShape(ctx, tx, depID, "web")
		if err != nil {
			return err
		}

		if s.HealthStatus == nil || s.HealthStatus.Check != api.HealthCheckUnknown || s.HealthStatus.Autohealing != api.AutohealingActive {
			t.Errorf("a new shape's health_status: %+v", s.HealthStatus)
		}

		since := time.Now().UTC().Truncate(time.Second)
		err = db.SetShapeHealHold(ctx, tx, shapeID, "3 of 4 instances are unhealthy", &since)
		if err != nil {
			return err
		}

		err = db.SetShapeHealthCheck(ctx, tx, shapeID, checks, api.HealthCheckBroken, "exit code 127")
		if err != nil {
			return err
		}

		s, err = db.GetShape(ctx, tx, depID, "web")
		if err != nil {
			return err
		}

		hs := s.HealthStatus
		if hs.Check != api.HealthCheckBroken || hs.CheckReason != "exit code 127" || hs.Autohealing != api.AutohealingHeld || hs.AutohealingReason != "3 of 4 instances are unhealthy" || hs.Since == nil || !hs.Since.Equal(since) {
			t.Errorf("a held shape with a broken check: %+v", hs)
		}

		// A check state decided for another health object than the shape's is not kept.
		err = db.SetShapeHealthCheck(ctx, tx, shapeID, &api.DeploymentShapeHealth{Command: []string{"false"}}, api.HealthCheckOK, "")
		if err != nil {
			return err
		}

		s, err = db.GetShape(ctx, tx, depID, "web")
		if err != nil {
			return err
		}

		if s.HealthCheck != api.HealthCheckBroken {
			t.Errorf("a stale checker's state overwrote the shape's: %q", s.HealthCheck)
		}

		put := s.Writable()
		put.Health.Replace = false
		err = db.UpdateShape(ctx, tx, shapeID, put)
		if err != nil {
			return err
		}

		s, err = db.GetShape(ctx, tx, depID, "web")
		if err != nil {
			return err
		}

		if s.HealthStatus.Autohealing != api.AutohealingOff || s.HealthStatus.Check != api.HealthCheckUnknown {
			t.Errorf("after the health object changed: %+v", s.HealthStatus)
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
