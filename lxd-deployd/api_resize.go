package main

import (
	"fmt"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Vertical scaling (doc/api.md, "Resizing"): PUT .../shapes/{shape}/resources sets new
// limits in the shape's template, as a revision with cause resize, and starts an operation
// that applies them live to the running instances (fleet.Resizer).

// resizeAPI serves /1.0/deployments/{deployment}/shapes/{shape}/resources.
type resizeAPI struct {
	db       *db.Cluster
	lxd      *backend.LXD
	reporter *reporter.Reporter

	// inPlace is the fleet's in-place pass: it takes over what an operation leaves undone.
	inPlace *fleet.InPlaceKeeper
}

func (a resizeAPI) put(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentShapeResourcesPut
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	err = validate.Notes(req.Reason)
	if err != nil {
		return response.SmartError(rest.BadRequest(fmt.Errorf("reason: %w", err)))
	}

	// Refused before anything is stored when LXD is offline.
	err = a.lxd.Available()
	if err != nil {
		return response.SmartError(err)
	}

	by := rest.RequestorFromContext(r.Context())
	target, revision, err := rollout.StoreResize(r.Context(), a.db, ref, req, by, auth.CallerFromContext(r.Context()).IsAdmin())
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(by, target.DeploymentID, reporter.ShapeResized.Event(ref, nil))
	a.reporter.ShapeRevised(by, ref, target.DeploymentID, revision, 0)
	op := a.inPlace.StartResize(ref, target, revision, by)
	return response.AsyncResponse(op.URL(), op.API())
}
