package dbtest

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// InstanceCase is one instance record of EveryInstance: a state, a hook wait, a health
// verdict, and whether it was made from an older revision than its shape's latest.
type InstanceCase struct {
	Shape, Name         string
	State, Hook, Health string
	Outdated            bool

	// Where it was written: its shape, the shape's latest revision, its deployment.
	ShapeID      int64
	Latest       int
	DeploymentID int64
	Project      string
}

func (c InstanceCase) String() string {
	return fmt.Sprintf("%s/hook=%q/health=%s/outdated=%v", c.State, c.Hook, c.Health, c.Outdated)
}

// LegacyState is a state no code writes, as a record from an older (or newer) build would
// hold: the rules must give it one answer in SQL and in Go too.
const LegacyState = "legacy"

// EveryInstance writes deployment "every" in project default with one shape per case, each
// holding the case's one instance (so a shape's counts are that instance's answer), on LXD
// member m1, for every state of rules.States (and LegacyState), every hook wait, health
// verdict and revision. Every shape has health checks.
func EveryInstance(t testing.TB, c *db.Cluster) []InstanceCase {
	t.Helper()
	var cases []InstanceCase
	for _, state := range append(append([]string{}, rules.States...), LegacyState) {
		for _, hook := range []string{"", api.LifecycleLaunchingWait, api.LifecycleTerminatingWait} {
			for _, health := range []string{api.HealthHealthy, api.HealthUnhealthy, api.HealthStarting} {
				for _, outdated := range []bool{false, true} {
					n := len(cases)
					cases = append(cases, InstanceCase{Shape: fmt.Sprintf("s%d", n), Name: fmt.Sprintf("i%d", n), State: state, Hook: hook, Health: health, Outdated: outdated, Project: "default"})
				}
			}
		}
	}

	now := time.Now()
	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		depID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "every"}})
		if err != nil {
			return err
		}

		for n := range cases {
			c := &cases[n]
			put := api.DeploymentShapePut{ScalingMaximum: 3, Health: &api.DeploymentShapeHealth{Command: []string{"true"}}}
			shapeID, err := db.CreateShape(ctx, tx, depID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: c.Shape}, DeploymentShapePut: put})
			if err != nil {
				return err
			}

			// Latest is 2, so that an outdated instance is at a revision that exists.
			err = db.SetShapeRevision(ctx, tx, shapeID, 2)
			if err != nil {
				return err
			}

			c.DeploymentID, c.ShapeID, c.Latest = depID, shapeID, 2
			revision := 2
			if c.Outdated {
				revision = 1
			}

			id, err := db.CreateInstance(ctx, tx, "default", shapeID, c.Name, "h", revision, "test", now)
			if err != nil {
				return err
			}

			// Hooks, health and location are recorded on created instances; the state moves
			// last.
			err = db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "test", now)
			if err != nil {
				return err
			}

			err = db.SetInstanceHealth(ctx, tx, id, db.InstanceHealth{Status: c.Health, CheckedAt: &now})
			if err != nil {
				return err
			}

			err = db.MoveInstanceLocation(ctx, tx, id, "", "m1")
			if err != nil {
				return err
			}

			if c.Hook != "" {
				deadline := now.Add(time.Hour)
				err = db.SetInstanceHook(ctx, tx, id, c.Hook, &deadline)
				if err != nil {
					return err
				}
			}

			if c.State != db.InstanceCreated {
				err = db.SetInstanceState(ctx, tx, id, db.InstanceCreated, c.State, "test", now)
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
