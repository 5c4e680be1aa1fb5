package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/deployments"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// shapesAPI serves /1.0/deployments/{deployment}/shapes.
type shapesAPI struct {
	db       *db.Cluster
	lxd      *backend.LXD
	fleet    *fleet.Fleet
	reporter *reporter.Reporter
}

func (a shapesAPI) list(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	shapes, err := deployments.Shapes(r.Context(), a.db, ref)
	if err != nil {
		return response.SmartError(err)
	}

	return rest.ListResponse(level, shapes,
		func(s db.Shape) string { return api.DeploymentShapeURL(ref.Project, ref.Name, s.Name) },
		func(s db.Shape) api.DeploymentShape { return rest.ShapeFor(r, s.DeploymentShape) })
}

func (a shapesAPI) create(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentShapesPost
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	notes, err := notesParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	deploymentID, err := deployments.CreateShape(r.Context(), a.db, ref, req, rollout.RevisionArgs{Cause: rollout.CauseAPI, By: rest.RequestorFromContext(r.Context()), Notes: notes})
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.ShapeCreated(r.Context(), rest.RequestorFromContext(r.Context()), ref, deploymentID, req.Name, req.DeploymentShapePut)
	return response.SyncResponseLocation(nil, api.DeploymentShapeURL(ref.Project, ref.Name, req.Name))
}

func (a shapesAPI) get(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	shape, err := deployments.GetShape(r.Context(), a.db, ref)
	if err != nil {
		return response.SmartError(err)
	}

	shape.PlacementStatus = fleet.PlacementStatus(r.Context(), a.db, a.lxd.Cluster(), shape)
	shown := rest.ShapeFor(r, shape.DeploymentShape)
	return response.SyncResponseETag(shown, shown.DeploymentShapePut)
}

func (a shapesAPI) put(r *http.Request) response.Response {
	return a.update(r, false)
}

func (a shapesAPI) patch(r *http.Request) response.Response {
	return a.update(r, true)
}

// update serves PUT (replace) and PATCH (merge). A new instance template only applies to
// instances created afterwards (seed 004's review decision).
func (a shapesAPI) update(r *http.Request, patch bool) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	body, err := rest.ReadBody(r)
	if err != nil {
		return response.SmartError(err)
	}

	notes, err := notesParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	args := rollout.RevisionArgs{Cause: rollout.CauseAPI, By: rest.RequestorFromContext(r.Context()), Notes: notes}
	out, err := deployments.UpdateShape(r.Context(), a.db, ref, rest.EditFromBody[api.DeploymentShapePut](r, body, patch), args)
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.ShapeUpdated(r.Context(), args.By, ref.DeploymentRef, out.DeploymentID, out.Before, out.After)
	a.reporter.ShapeRevised(args.By, ref, out.DeploymentID, out.Revised.Revision, out.Revised.Rollout)
	return response.EmptySyncResponse()
}

func (a shapesAPI) rename(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentShapePost
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	deploymentID, err := deployments.RenameShape(r.Context(), a.db, ref, req.Name)
	if err != nil {
		return response.SmartError(err)
	}

	url := api.DeploymentShapeURL(ref.Project, ref.Name, req.Name)
	a.reporter.Send(rest.RequestorFromContext(r.Context()), deploymentID, reporter.ShapeRenamed.Event(refs.ShapeRef{DeploymentRef: ref.DeploymentRef, Shape: req.Name}, nil))
	return response.SyncResponseLocation(nil, url)
}

func (a shapesAPI) delete(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	deploymentID, err := deployments.DeleteShape(r.Context(), a.db, a.fleet, ref, rest.RequestorFromContext(r.Context()), rest.ForceParam(r))
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.ShapeDeleted(rest.RequestorFromContext(r.Context()), ref.DeploymentRef, deploymentID, ref.Shape)
	return response.EmptySyncResponse()
}
