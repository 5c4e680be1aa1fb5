package db

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// GetShapeCounts counts, in its one query, a shape's instances by health, readiness,
// revision and hook, its warm pool and its active rollout; deleting instances do not count.
func TestGetShapeCounts(t *testing.T) {
	c := newTestCluster(t)
	now := time.Now()
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		put := api.DeploymentShapePut{ScalingMaximum: 9,
			Health:   &api.DeploymentShapeHealth{Command: []string{"true"}},
			Hooks:    &api.DeploymentShapeHooks{LaunchTimeout: "1m"},
			WarmPool: &api.DeploymentShapeWarmPool{Size: 2}}
		shapeID, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: put})
		if err != nil {
			return err
		}

		_, err = CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "plain"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 1}})
		if err != nil {
			return err
		}

		_, err = tx.ExecContext(ctx, "UPDATE deployments_shapes SET revision = 2 WHERE id = ?", shapeID)
		if err != nil {
			return err
		}

		// name: revision, state, health, hook
		instances := []struct {
			name     string
			revision int
			state    string
			health   string
			hook     string
		}{
			{"ready", 2, InstanceCreated, api.HealthHealthy, ""},
			{"sick", 1, InstanceCreated, api.HealthUnhealthy, ""},
			{"waiting", 2, InstanceCreated, api.HealthHealthy, api.LifecycleLaunchingWait},
			{"draining", 1, InstanceCreated, api.HealthStarting, api.LifecycleTerminatingWait},
			{"new", 2, InstanceCreating, "", ""},
			{"gone", 1, InstanceDeleting, "", ""},
		}
		for _, i := range instances {
			id, err := CreateInstance(ctx, tx, "default", shapeID, i.name, "hash", i.revision, "test", now)
			if err != nil {
				return err
			}

			if i.state == InstanceCreating {
				continue
			}

			err = SetInstanceState(ctx, tx, id, InstanceCreating, InstanceCreated, "test", now)
			if err == nil && i.health != "" {
				err = SetInstanceHealth(ctx, tx, id, InstanceHealth{Status: i.health})
			}

			if err == nil && i.hook != "" {
				err = SetInstanceHook(ctx, tx, id, i.hook, &now)
			}

			if err == nil && i.state == InstanceDeleting {
				err = SetInstanceState(ctx, tx, id, InstanceCreated, InstanceDeleting, "test", now)
			}

			if err != nil {
				return err
			}
		}

		ready, err := CreatePoolInstance(ctx, tx, shapeID, "w1", "hash", "test", now)
		if err == nil {
			_, err = CreatePoolInstance(ctx, tx, shapeID, "w2", "hash", "test", now)
		}

		if err == nil {
			err = SetPoolInstanceReady(ctx, tx, ready)
		}

		if err == nil {
			_, err = CreateRollout(ctx, tx, shapeID, api.DeploymentRollout{Status: api.RolloutPaused, Revision: 2, FromRevision: 1, Size: 4}, now)
		}

		if err == nil {
			err = SetShapeReplaceFailures(ctx, tx, shapeID, 3, "gave up")
		}

		return err
	})

	var counts []ShapeCount
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		counts, err = GetShapeCounts(ctx, tx)
		return err
	})

	if len(counts) != 2 || counts[0].Shape != "plain" || counts[1].Shape != "web" {
		t.Fatalf("one row per shape, sorted: %+v", counts)
	}

	plain := counts[0]
	if plain.Current != 0 || plain.Maximum != 1 || plain.Health != nil || plain.WarmPool != nil || plain.HasHooks || plain.Degraded || plain.RolloutsRunning+plain.RolloutsPaused != 0 {
		t.Errorf("a plain shape: %+v", plain)
	}

	web := counts[1]
	web.Health, web.WarmPool = nil, nil
	want := ShapeCount{Project: "default", Deployment: "dep1", Shape: "web", Current: 5, Maximum: 9, Revision: 2, Outdated: 2,
		Healthy: 2, Unhealthy: 1, Starting: 1, Unknown: 1, Settled: 3, SettledHealthy: 1, LaunchingWait: 1, TerminatingWait: 1,
		WarmPoolReady: 1, Degraded: true, RolloutsPaused: 1, HasHooks: true}
	if web != want {
		t.Errorf("shape web:\n got %+v\nwant %+v", web, want)
	}

	if counts[1].Health == nil || len(counts[1].Health.Command) != 1 || counts[1].WarmPool == nil || counts[1].WarmPool.Size != 2 {
		t.Errorf("shape web's settings: %+v %+v", counts[1].Health, counts[1].WarmPool)
	}
}
