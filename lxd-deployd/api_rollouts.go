package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// rolloutsAPI serves .../shapes/{shape}/rollouts.
type rolloutsAPI struct {
	db       *db.Cluster
	lxd      *backend.LXD
	ops      *operations.Manager
	engine   *rollout.Engine
	reporter *reporter.Reporter
}

// rolloutFromRequest reads the shape and rollout number of a request and the rollout row.
func (a rolloutsAPI) rolloutFromRequest(r *http.Request) (refs.ShapeRef, *db.Rollout, error) {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return ref, nil, err
	}

	n, err := pathNumber(r, "rollout")
	if err != nil {
		return ref, nil, err
	}

	rollout, err := a.readRollout(r.Context(), ref, n)
	return ref, rollout, err
}

// readRollout reads rollout n of the shape ref names.
func (a rolloutsAPI) readRollout(ctx context.Context, ref refs.ShapeRef, n int) (*db.Rollout, error) {
	var rollout *db.Rollout
	err := refs.InShapeTx(ctx, a.db, ref, func(ctx context.Context, tx *sql.Tx, _ int64, shape *db.Shape) (err error) {
		rollout, err = db.GetRollout(ctx, tx, shape.ID, n)
		return err
	})

	return rollout, err
}

// withCounts fills a rollout's instance counts as its steps count them (rollout.Counts),
// which the operation following a rollout reads every second; a rollout whose counts
// cannot be read is shown without them.
func (a rolloutsAPI) withCounts(ctx context.Context, r db.Rollout) api.DeploymentRollout {
	out := r.DeploymentRollout
	client, err := a.lxd.Conn()
	if err != nil {
		client = nil // no LXD: the counts without readiness
	}

	updated, ready, outdated, err := a.engine.Counts(ctx, client, r)
	if err == nil {
		out.Updated, out.Ready, out.Outdated = updated, ready, outdated
	}

	return out
}

func (a rolloutsAPI) list(r *http.Request) response.Response {
	return shapeListResponse(r, a.db,
		func(ctx context.Context, tx *sql.Tx, shape *db.Shape) ([]db.Rollout, error) {
			return db.GetRollouts(ctx, tx, db.RolloutFilter{ShapeID: shape.ID})
		},
		func(ref refs.ShapeRef, ro db.Rollout) string {
			return api.DeploymentShapeRolloutURL(ref.Project, ref.Name, ref.Shape, ro.Number)
		},
		func(ro db.Rollout) api.DeploymentRollout {
			// Only the active rollout (one at most) gets its counts: finished ones replaced
			// what they replaced, and reading LXD for each would cost a listing apiece.
			if ro.Finished() {
				return rest.RolloutFor(r, a.withDeployer(r.Context(), ro, ro.DeploymentRollout))
			}

			return rest.RolloutFor(r, a.withDeployer(r.Context(), ro, a.withCounts(r.Context(), ro)))
		})
}

func (a rolloutsAPI) get(r *http.Request) response.Response {
	_, rollout, err := a.rolloutFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(rest.RolloutFor(r, a.withDeployer(r.Context(), *rollout, a.withCounts(r.Context(), *rollout))))
}

// create starts a rollout of the shape's latest revision, refusing up front what the bounds
// and settings cannot do, and answers an operation that follows it.
func (a rolloutsAPI) create(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	req := api.DeploymentRolloutsPost{}
	err = rest.DecodeOptionalBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	err = validate.Notes(req.Notes)
	if err != nil {
		return response.SmartError(rest.BadRequest(err))
	}

	by := rest.RequestorFromContext(r.Context())
	var deploymentID int64
	var number int
	err = refs.InShapeTx(r.Context(), a.db, ref, func(ctx context.Context, tx *sql.Tx, id int64, shape *db.Shape) (err error) {
		deploymentID = id
		err = checkRolloutFeasible(ctx, tx, shape)
		if err != nil {
			return err
		}

		by, err = fleet.WithKey(ctx, tx, by, deploymentID)
		if err != nil {
			return err
		}

		number, err = rollout.Start(ctx, tx, shape, rollout.CauseAPI, by, req.Notes, false, true)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.RolloutEvent(by, ref, deploymentID, number, reporter.RolloutStarted)
	a.engine.Poke()
	op := a.watch(ref, deploymentID, number)
	return response.AsyncResponse(op.URL(), op.API())
}

// checkRolloutFeasible refuses, before anything changes, a rollout the shape's bounds and
// settings would never let move.
func checkRolloutFeasible(ctx context.Context, tx *sql.Tx, shape *db.Shape) error {
	settings, err := shapes.ResolveRollout(shape.Rollout, shape.ScalingCurrent)
	if err != nil {
		return rest.BadRequest(err)
	}

	if settings.Strategy == api.RolloutCustom {
		return nil // the deployer decides how instances are replaced; its calls meet the bounds
	}

	rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
	if err != nil {
		return err
	}

	state := shapes.RolloutState{Settings: settings, Size: shape.ScalingCurrent, Minimum: shape.ScalingMinimum, Maximum: shape.ScalingMaximum, Target: shape.Revision}
	for _, row := range rows {
		if shapes.Counted(row) {
			state.Instances = append(state.Instances, shapes.RolloutInstance{Name: row.Name, Revision: row.Revision, Ready: true})
		}
	}

	plan := shapes.PlanRollout(state)
	if plan.Refuse != "" {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s cannot be rolled out: %s", shape.Name, plan.Refuse)
	}

	return nil
}

// watch runs an operation that follows a rollout, its metadata showing progress. The
// rollout lives in the database, not in the operation: cancelling the operation stops the
// watching only (POST .../cancel cancels the rollout), and a restart resumes the rollout.
func (a rolloutsAPI) watch(ref refs.ShapeRef, deploymentID int64, number int) *operations.Operation {
	op := a.ops.Start(operations.Args{
		Description:  fmt.Sprintf("Rolling out shape %s (rollout %d)", ref.Shape, number),
		Project:      ref.Project,
		DeploymentID: deploymentID,
		Resources: map[string][]string{
			"deployment_shapes":   {api.DeploymentShapeURL(ref.Project, ref.Name, ref.Shape)},
			"deployment_rollouts": {api.DeploymentShapeRolloutURL(ref.Project, ref.Name, ref.Shape, number)},
		},
		Run: func(ctx context.Context, op *operations.Operation) error {
			ticker := time.NewTicker(time.Second)
			defer ticker.Stop()
			for {
				rollout, err := a.readRollout(ctx, ref, number)
				if err != nil {
					return err
				}

				status := a.withCounts(ctx, *rollout)
				op.SetMetadata(map[string]any{
					"rollout": number, "status": status.Status, "phase": status.Phase, "revision": status.Revision,
					"replaced": status.Updated, "total": status.Updated + status.Outdated, "ready": status.Ready, "reason": status.Reason,
				})

				switch status.Status {
				case api.RolloutComplete:
					return nil
				case api.RolloutFailed, api.RolloutCancelled, api.RolloutReverted:
					return fmt.Errorf("rollout %d %s: %s", number, status.Status, status.Reason)
				}

				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-ticker.C:
				}
			}
		},
	})

	// The answer names the rollout at once, before the first progress update.
	op.SetMetadata(map[string]any{"rollout": number})
	return op
}

// action serves POST .../rollouts/{n}/{action}: pause, resume, cancel, promote, abort.
func (a rolloutsAPI) action(r *http.Request) response.Response {
	name := mux.Vars(r)["action"]
	_, found, err := a.rolloutFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	if found.Finished() {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is %s: it is over, start a new one to replace instances again", found.Number, found.Status))
	}

	by := rest.RequestorFromContext(r.Context())
	e := a.engine
	ro := *found
	switch name {
	case "pause":
		if rollout.UsesDeployer(ro) {
			err = errPauseCustom(ro)
			break
		}

		err = e.Transition(r.Context(), ro, api.RolloutRunning, api.RolloutPaused, "paused", "paused by "+by.String(), reporter.RolloutPaused, by)
	case "resume":
		if ro.Phase == "wait-promote" {
			err = lxdapi.StatusErrorf(http.StatusConflict, "rollout %d waits for its canaries to be judged: promote or abort it", ro.Number)
			break
		}

		err = e.Transition(r.Context(), ro, api.RolloutPaused, api.RolloutRunning, "resumed", "resumed by "+by.String(), reporter.RolloutResumed, by)
	case "cancel":
		err = e.Transition(r.Context(), ro, ro.Status, api.RolloutCancelled, "done", "cancelled by "+by.String()+": instances replaced so far stay", reporter.RolloutCancelled, by)
	case "promote":
		err = a.promote(r.Context(), ro, by)
	case "abort":
		if ro.Strategy.Strategy != api.RolloutCanary || ro.Promoted {
			err = lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is not a canary waiting to be judged: cancel stops it, or roll the shape back", ro.Number)
			break
		}

		err = e.Revert(r.Context(), ro, ro.Status, rollout.CauseAbort, "aborted by "+by.String(), by)
	}

	if err != nil {
		return response.SmartError(err)
	}

	return response.EmptySyncResponse()
}

// promote lets a canary rollout go on as a rolling one.
func (a rolloutsAPI) promote(ctx context.Context, ro db.Rollout, by api.DeploymentRequestor) error {
	if ro.Strategy.Strategy != api.RolloutCanary || ro.Promoted {
		return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is not a canary waiting to be promoted", ro.Number)
	}

	err := a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		promoted, status, phase, reason := true, api.RolloutRunning, "replace", "promoted by "+by.String()
		err := db.UpdateRollout(ctx, tx, ro.ID, ro.Status, db.RolloutUpdate{Promoted: &promoted, Status: &status, Phase: &phase, Reason: &reason, Progress: true}, time.Now())
		if errors.Is(err, db.ErrRolloutChanged) {
			return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d changed meanwhile: read it again", ro.Number)
		}

		if err != nil {
			return err
		}

		return fleet.RecordActivity(ctx, tx, ro.DeploymentID, api.DeploymentActivity{Shape: ro.Shape, Action: "rollout-promoted", Requestor: by, Why: fmt.Sprintf("rollout %d: %s", ro.Number, reason)})
	})
	if err != nil {
		return err
	}

	a.reporter.RolloutEvent(by, refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: ro.Project, Name: ro.Deployment}, Shape: ro.Shape}, ro.DeploymentID, ro.Number, reporter.RolloutPromoted)
	a.engine.Poke()
	return nil
}
