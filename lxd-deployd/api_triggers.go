package main

import (
	"context"
	"database/sql"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
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

	action := mux.Vars(r)["action"]
	by := rest.RequestorFromContext(r.Context())
	var deploymentID int64
	var revised map[string]rollout.Revised
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		switch action {
		case "suspend":
			return rollout.SuspendDeploymentTriggers(ctx, tx, deploymentID, ref.Name, by, req.Notes)
		case "resume":
			revised, err = rollout.ResumeDeploymentTriggers(ctx, tx, deploymentID, ref.Name, by, req.Notes)
			return err
		}

		return lxdapi.StatusErrorf(http.StatusNotFound, "unknown action %q: suspend or resume", action)
	})
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
	var deploymentID int64
	var out rollout.Revised
	err = refs.InShapeTx(r.Context(), a.db, ref, func(ctx context.Context, tx *sql.Tx, id int64, shape *db.Shape) (err error) {
		deploymentID = id
		if shape.TriggersSuspended == nil {
			return lxdapi.StatusErrorf(http.StatusConflict, "the triggers of shape %s are not suspended: nothing to resume (the deployment's switch is POST /1.0/deployments/%s/triggers/resume)", ref.Shape, ref.Name)
		}

		out, err = rollout.ResumeShapeTriggers(ctx, tx, shape, by, req.Notes)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(by, deploymentID, reporter.ShapeUpdated.Event(ref, nil))
	a.reporter.ShapeRevised(by, ref, deploymentID, out.Revision, out.Rollout)
	a.reporter.WatchImages()
	return response.EmptySyncResponse()
}
