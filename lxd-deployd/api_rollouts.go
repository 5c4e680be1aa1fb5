package main

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// rolloutsAPI serves .../shapes/{shape}/rollouts; the engine (package rollout) reads,
// checks and changes rollouts.
type rolloutsAPI struct {
	db     *db.Cluster
	ops    *operations.Manager
	engine *rollout.Engine
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

	ro, err := rollout.Read(r.Context(), a.db, ref, n)
	return ref, ro, err
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
			return rest.RolloutFor(r, a.engine.View(r.Context(), ro, !ro.Finished()))
		})
}

func (a rolloutsAPI) get(r *http.Request) response.Response {
	_, ro, err := a.rolloutFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(rest.RolloutFor(r, a.engine.View(r.Context(), *ro, true)))
}

// create starts a rollout of the shape's latest revision and answers an operation that
// follows it.
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

	op, err := a.engine.Create(r.Context(), a.ops, ref, req.Notes, rest.RequestorFromContext(r.Context()))
	if err != nil {
		return response.SmartError(err)
	}

	return response.AsyncResponse(op.URL(), op.API())
}

// action serves POST .../rollouts/{n}/{action}: pause, resume, cancel, promote, abort.
func (a rolloutsAPI) action(r *http.Request) response.Response {
	_, found, err := a.rolloutFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	err = a.engine.Act(r.Context(), *found, mux.Vars(r)["action"], rest.RequestorFromContext(r.Context()))
	if err != nil {
		return response.SmartError(err)
	}

	return response.EmptySyncResponse()
}
