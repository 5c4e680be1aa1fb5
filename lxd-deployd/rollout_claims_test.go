package main

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestRolloutClaimFencesTheEngine: once a member stalled past its claim and another took
// the rollout over, the stalled member's engine can no longer reserve a launch or delete
// for it nor end it, while the new holder can, and a user's pause applies whoever holds it.
func TestRolloutClaimFencesTheEngine(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts", "", 202, "")

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	stalled := newRolloutEngine(a.db, nil, nil, lifecycle{}, logger, "m1")
	holder := newRolloutEngine(a.db, nil, nil, lifecycle{}, logger, "m2")
	ctx := context.Background()
	var r db.Rollout
	claim := func(e *rolloutEngine, at time.Time) bool {
		var ok bool
		err := a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
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

	reserve := func(e *rolloutEngine) error {
		return a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
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

	err := reserve(stalled)
	if !lxdapi.StatusErrorCheck(err, http.StatusConflict) {
		t.Fatalf("the stalled member's reservation after the takeover: %v", err)
	}

	err = stalled.finish(ctx, r, api.RolloutComplete, "", lifecycleRolloutCompleted)
	if !lxdapi.StatusErrorCheck(err, http.StatusConflict) {
		t.Fatalf("the stalled member ending the rollout after the takeover: %v", err)
	}

	if err := reserve(holder); err != nil {
		t.Fatalf("the new holder's reservation: %v", err)
	}

	// A user's pause is not the engine's decision: it applies through any member.
	err = stalled.transition(ctx, r, api.RolloutRunning, api.RolloutPaused, "paused", "paused by test", lifecycleRolloutPaused, fleet.InternalRequestor("test"))
	if err != nil {
		t.Fatalf("a user's pause through the stalled member: %v", err)
	}

	rollout := a.expect("GET", "/1.0/deployments/dep1/shapes/web/rollouts/1", "", 200, "")["metadata"].(map[string]any)
	if rollout["status"] != api.RolloutPaused {
		t.Fatalf("rollout: %v", rollout)
	}
}
