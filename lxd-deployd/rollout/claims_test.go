package rollout

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestRolloutClaimFencesTheEngine: once a member stalled past its claim and another took
// the rollout over, the stalled member's engine can no longer reserve a launch or delete
// for it nor end it, while the new holder can, and a user's pause applies whoever holds it.
func TestRolloutClaimFencesTheEngine(t *testing.T) {
	// A shape with a rollout, as POST .../shapes and POST .../rollouts make them.
	cluster := dbtest.Open(t)
	ctx := context.Background()
	var shapeID int64
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var deployment api.DeploymentsPost
		var req api.DeploymentShapesPost
		err := errors.Join(json.Unmarshal([]byte(`{"name":"dep1"}`), &deployment), json.Unmarshal([]byte(shapeBody), &req))
		if err != nil {
			return err
		}

		id, err := db.CreateDeployment(ctx, tx, "default", deployment)
		if err != nil {
			return err
		}

		req.Config = map[string]string{}
		shapeID, err = db.CreateShape(ctx, tx, id, req)
		if err != nil {
			return err
		}

		_, err = RecordRevision(ctx, tx, id, shapeID, nil, req.DeploymentShapePut, RevisionArgs{Cause: CauseAPI, By: api.InternalRequestor("test")})
		if err != nil {
			return err
		}

		shape, err := ShapeByID(ctx, tx, id, shapeID)
		if err != nil {
			return err
		}

		_, err = Start(ctx, tx, shape, CauseAPI, api.InternalRequestor("test"), "", false, true)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	stalled := New(cluster, nil, nil, silent{}, logger, "m1", nil, Wakes{})
	holder := New(cluster, nil, nil, silent{}, logger, "m2", nil, Wakes{})
	var r db.Rollout
	claim := func(e *Engine, at time.Time) bool {
		var ok bool
		err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			active, err := db.GetRollouts(ctx, tx, db.RolloutFilter{Active: true})
			if err != nil || len(active) != 1 {
				t.Fatalf("active rollouts: %+v %v", active, err)
			}

			r = active[0]
			ok, err = e.claim.claim(ctx, tx, r, at)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}

		return ok
	}

	reserve := func(e *Engine) error {
		return cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return e.stillRunning(r, true)(ctx, tx, nil, 0)
		})
	}

	now := time.Now()
	if !claim(stalled, now) || claim(holder, now) {
		t.Fatal("m1 claims the rollout first, m2 must not take it while m1's claim lasts")
	}

	if err := reserve(stalled); err != nil {
		t.Fatalf("the holder's reservation: %v", err)
	}

	if !lxdapi.StatusErrorCheck(reserve(holder), http.StatusConflict) {
		t.Fatal("a member without the claim must not reserve for the rollout")
	}

	// m1 stalls past its claim (15 s); m2 takes the rollout over.
	if !claim(holder, now.Add(16*time.Second)) {
		t.Fatal("m2 must take over an expired claim")
	}

	err = reserve(stalled)
	if !lxdapi.StatusErrorCheck(err, http.StatusConflict) {
		t.Fatalf("the stalled member's reservation after the takeover: %v", err)
	}

	err = stalled.finish(ctx, r, api.RolloutComplete, "", reporter.RolloutCompleted)
	if !lxdapi.StatusErrorCheck(err, http.StatusConflict) {
		t.Fatalf("the stalled member ending the rollout after the takeover: %v", err)
	}

	if err := reserve(holder); err != nil {
		t.Fatalf("the new holder's reservation: %v", err)
	}

	// A user's pause is not the engine's decision: it applies through any member.
	err = stalled.Transition(ctx, r, api.RolloutRunning, api.RolloutPaused, "paused", "paused by test", reporter.RolloutPaused, api.InternalRequestor("test"))
	if err != nil {
		t.Fatalf("a user's pause through the stalled member: %v", err)
	}

	var rollout *db.Rollout
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rollout, err = db.GetRollout(ctx, tx, shapeID, 1)
		return err
	})
	if err != nil || rollout.Status != api.RolloutPaused {
		t.Fatalf("rollout: %+v %v", rollout, err)
	}
}

const shapeBody = `{"name":"web","instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":1,"scaling_maximum":3}`

// silent reports nothing.
type silent struct{}

func (silent) Send(api.DeploymentRequestor, int64, reporter.Event) {}
func (silent) RolloutEvent(api.DeploymentRequestor, refs.ShapeRef, int64, int, reporter.RolloutAction) {
}
