package rollout

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestCountsFollowTheLatestRevision: a template change while a rollout runs supersedes
// the revision the rollout started for (the rollout follows the latest; Start starts no
// second one). The API's counts (Counts) then count the instances at the rollout's
// recorded revision as outdated, as the step's plan does, before any step records the new
// target. The API compared with the rollout's recorded revision and showed them updated
// (3 of 3 replaced) while the step went on replacing them.
func TestCountsFollowTheLatestRevision(t *testing.T) {
	cluster := dbtest.Open(t)
	ctx := context.Background()
	var r db.Rollout
	var shapeID, deploymentID int64
	now := time.Now()
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var deployment api.DeploymentsPost
		var req api.DeploymentShapesPost
		err := errors.Join(json.Unmarshal([]byte(`{"name":"dep1"}`), &deployment), json.Unmarshal([]byte(shapeBody), &req))
		if err != nil {
			return err
		}

		deploymentID, err = db.CreateDeployment(ctx, tx, "default", deployment)
		if err != nil {
			return err
		}

		req.Config = map[string]string{}
		shapeID, err = db.CreateShape(ctx, tx, deploymentID, req)
		if err != nil {
			return err
		}

		_, err = RecordRevision(ctx, tx, deploymentID, shapeID, nil, req.DeploymentShapePut, RevisionArgs{Cause: CauseAPI, By: api.InternalRequestor("test")})
		if err != nil {
			return err
		}

		shape, err := ShapeByID(ctx, tx, deploymentID, shapeID)
		if err != nil {
			return err
		}

		number, err := Start(ctx, tx, shape, CauseAPI, api.InternalRequestor("test"), "", false, true)
		if err != nil {
			return err
		}

		rollout, err := db.GetRollout(ctx, tx, shapeID, number)
		if err != nil {
			return err
		}

		r = *rollout

		// Three instances at the rollout's revision; then the template changes again (the
		// shape's latest moves past the rollout's record) and one instance of it is made.
		for n := range 3 {
			err = instanceAt(ctx, tx, shapeID, fmt.Sprintf("web-%d", n), r.Revision, now)
			if err != nil {
				return err
			}
		}

		err = db.SetShapeRevision(ctx, tx, shapeID, r.Revision+1)
		if err != nil {
			return err
		}

		return instanceAt(ctx, tx, shapeID, "web-new", r.Revision+1, now)
	})
	if err != nil {
		t.Fatal(err)
	}

	e := New(cluster, nil, nil, silent{}, slog.New(slog.NewTextHandler(io.Discard, nil)), "m1", nil, Wakes{})
	updated, ready, outdated, err := e.Counts(ctx, nil, r)
	if err != nil {
		t.Fatal(err)
	}

	if updated != 1 || outdated != 3 || ready != 0 {
		t.Fatalf("counts: %d updated, %d ready, %d outdated; want 1 updated (at the latest revision), 0 ready (LXD not asked), 3 outdated (at the rollout's recorded, superseded revision)", updated, ready, outdated)
	}

	// The step's plan counts the same from the same rows.
	var shape *db.Shape
	var rows []db.Instance
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		shape, err = ShapeByID(ctx, tx, deploymentID, shapeID)
		if err != nil {
			return err
		}

		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shapeID})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	settings, err := shapes.ResolveRollout(r.Strategy, r.Size)
	if err != nil {
		t.Fatal(err)
	}

	plan := shapes.PlanRollout(rolloutState(r, shape, rows, nil, settings, now))
	if plan.Updated != updated || plan.Outdated != outdated || plan.Ready != ready {
		t.Fatalf("the step counts %d updated, %d ready, %d outdated; the API %d, %d, %d", plan.Updated, plan.Ready, plan.Outdated, updated, ready, outdated)
	}

	// A finished rollout is compared with the revision it reached: a later change is the
	// next rollout's to replace.
	finished := r
	finished.Status = api.RolloutComplete
	if Target(finished, shape) != r.Revision || Target(r, shape) != shape.Revision {
		t.Fatalf("targets: finished %d, running %d; want %d and %d", Target(finished, shape), Target(r, shape), r.Revision, shape.Revision)
	}
}

// instanceAt records a created instance of a shape at a revision.
func instanceAt(ctx context.Context, tx *sql.Tx, shapeID int64, name string, revision int, now time.Time) error {
	id, err := db.CreateInstance(ctx, tx, "default", shapeID, name, "h", revision, "test", now)
	if err != nil {
		return err
	}

	return db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "test", now)
}
