package main

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// revisionsAPI serves .../shapes/{shape}/revisions, .../rollback and the activity log.
type revisionsAPI struct {
	db       *db.Cluster
	lxd      *backend.LXD
	reporter *reporter.Reporter
}

// pathNumber reads a numeric path variable (a revision or rollout number).
func pathNumber(r *http.Request, variable string) (int, error) {
	n, err := strconv.Atoi(mux.Vars(r)[variable])
	if err != nil || n < 1 {
		return 0, lxdapi.StatusErrorf(http.StatusBadRequest, "%s %q must be a number from 1", variable, mux.Vars(r)[variable])
	}

	return n, nil
}

func (a revisionsAPI) list(r *http.Request) response.Response {
	return shapeListResponse(r, a.db,
		func(ctx context.Context, tx *sql.Tx, shape *db.Shape) ([]api.DeploymentShapeRevision, error) {
			return db.GetRevisions(ctx, tx, shape.ID, 0)
		},
		func(ref refs.ShapeRef, rev api.DeploymentShapeRevision) string {
			return api.DeploymentShapeRevisionURL(ref.Project, ref.Name, ref.Shape, rev.Revision)
		},
		func(rev api.DeploymentShapeRevision) api.DeploymentShapeRevision { return rest.RevisionFor(r, rev) })
}

// get answers one revision, or with ?diff=m the fields that changed from revision m to it.
func (a revisionsAPI) get(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	n, err := pathNumber(r, "revision")
	if err != nil {
		return response.SmartError(err)
	}

	diff := 0
	if value := r.URL.Query().Get("diff"); value != "" {
		diff, err = strconv.Atoi(value)
		if err != nil || diff < 1 {
			return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "diff %q must be a revision number to compare with", value))
		}
	}

	rev, other, err := rollout.Revisions(r.Context(), a.db, ref, n, diff)
	if err != nil {
		return response.SmartError(err)
	}

	if other != nil {
		return response.SyncResponse(api.DeploymentShapeRevisionDiff{From: diff, To: n, Changes: rest.ChangesFor(r, shapes.Changes(other.Shape, rev.Shape))})
	}

	return response.SyncResponse(rest.RevisionFor(r, *rev))
}

// rollback sets a shape back to an earlier revision (a new revision: history moves
// forward). It checks first that LXD still has the image and profiles that revision names.
// With ?dry-run=1 it answers the plan and changes nothing.
func (a revisionsAPI) rollback(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	dryRun, err := dryRunQuery(r)
	if err != nil {
		return response.SmartError(err)
	}

	req := api.DeploymentShapeRollbackPost{}
	err = rest.DecodeOptionalBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	by := rest.RequestorFromContext(r.Context())
	result, deploymentID, err := rollout.RollbackAPI(r.Context(), a.db, a.lxd, ref, req, dryRun, by)
	if err != nil {
		return response.SmartError(err)
	}

	if !result.DryRun {
		a.reporter.Send(by, deploymentID, reporter.ShapeUpdated.Event(ref, nil))
		a.reporter.ShapeRevised(by, ref, deploymentID, result.Revision, result.Rollout)
	}

	result.Changes = rest.ChangesFor(r, result.Changes)
	return response.SyncResponse(result)
}

// activity answers GET /1.0/deployments/{deployment}/activity[?since=ID&shape=NAME].
func (a revisionsAPI) activity(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	filter := db.ActivityFilter{Shape: r.URL.Query().Get("shape")}
	if value := r.URL.Query().Get("since"); value != "" {
		filter.Since, err = strconv.ParseInt(value, 10, 64)
		if err != nil || filter.Since < 0 {
			return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "since %q must be an activity entry id (a whole number)", value))
		}
	}

	entries, err := fleet.Activity(r.Context(), a.db, ref, filter)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(rest.ActivityFor(r, entries))
}

// dryRunQuery reads ?dry-run=: a value that is not a boolean is a 400, never a real run.
func dryRunQuery(r *http.Request) (bool, error) {
	value := r.URL.Query().Get("dry-run")
	if value == "" {
		return false, nil
	}

	dryRun, err := strconv.ParseBool(value)
	if err != nil {
		return false, lxdapi.StatusErrorf(http.StatusBadRequest, "dry-run %q must be 1 or 0 (true or false)", value)
	}

	return dryRun, nil
}
