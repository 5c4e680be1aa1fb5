package main

import (
	"net/http"

	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Suspending and resuming triggers (rollout/triggers.go): POST
// /1.0/deployments/{deployment}/triggers/{suspend|resume} is the deployment's kill switch
// (resume also resumes every shape a rollback suspended), and POST
// .../shapes/{shape}/triggers/resume resumes one shape's.

// triggersBody reads the optional {"notes": ...} body.
func triggersBody(r *http.Request) (api.DeploymentTriggersPost, error) {
	req := api.DeploymentTriggersPost{}
	err := rest.DecodeOptionalBody(r, &req)
	if err != nil {
		return req, err
	}

	return req, rest.BadRequest(validate.Notes(req.Notes))
}

// deploymentTriggers serves POST /1.0/deployments/{deployment}/triggers/{action}.
func (a revisionsAPI) deploymentTriggers(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	req, err := triggersBody(r)
	if err != nil {
		return response.SmartError(err)
	}

	by := rest.RequestorFromContext(r.Context())
	deploymentID, revised, err := rollout.SwitchDeploymentTriggers(r.Context(), a.db, ref, mux.Vars(r)["action"], by, req.Notes)
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(by, deploymentID, reporter.DeploymentUpdated.Event(ref))
	for shape, out := range revised {
		shapeRef := refs.ShapeRef{DeploymentRef: ref, Shape: shape}
		a.reporter.Send(by, deploymentID, reporter.ShapeUpdated.Event(shapeRef, nil))
		a.reporter.ShapeRevised(by, shapeRef, deploymentID, out.Revision, out.Rollout)
	}

	// Resumed image triggers look at their aliases now, not at the next sweep.
	a.reporter.WatchImages()
	a.reporter.WakeRollouts()
	return response.EmptySyncResponse()
}

// shapeTriggersResume serves POST .../shapes/{shape}/triggers/resume.
func (a revisionsAPI) shapeTriggersResume(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	req, err := triggersBody(r)
	if err != nil {
		return response.SmartError(err)
	}

	by := rest.RequestorFromContext(r.Context())
	deploymentID, out, err := rollout.ResumeShape(r.Context(), a.db, ref, by, req.Notes)
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(by, deploymentID, reporter.ShapeUpdated.Event(ref, nil))
	a.reporter.ShapeRevised(by, ref, deploymentID, out.Revision, out.Rollout)
	a.reporter.WatchImages()
	return response.EmptySyncResponse()
}
