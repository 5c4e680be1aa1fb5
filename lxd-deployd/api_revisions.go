package main

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strconv"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
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

	var rev, other *api.DeploymentShapeRevision
	err = refs.InShapeTx(r.Context(), a.db, ref, func(ctx context.Context, tx *sql.Tx, _ int64, shape *db.Shape) (err error) {
		rev, err = db.GetRevision(ctx, tx, shape.ID, n)
		if err != nil || diff == 0 {
			return err
		}

		other, err = db.GetRevision(ctx, tx, shape.ID, diff)
		return err
	})
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

	err = validate.Notes(req.Notes)
	if err != nil {
		return response.SmartError(rest.BadRequest(err))
	}

	if req.Revision < 0 {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "revision %d must be a revision number, or 0 for the one before the latest", req.Revision))
	}

	template := req.Template == nil || *req.Template
	if !template && !req.Scaling {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "nothing to roll back: set template, scaling or both to true"))
	}

	// Read the revision and check it against LXD before changing anything.
	var old *api.DeploymentShapeRevision
	err = refs.InShapeTx(r.Context(), a.db, ref, func(ctx context.Context, tx *sql.Tx, _ int64, shape *db.Shape) (err error) {
		if req.Revision == 0 {
			req.Revision = shape.Revision - 1
			if req.Revision < 1 {
				return lxdapi.StatusErrorf(http.StatusBadRequest, "shape %s has only revision %d: there is nothing before it to roll back to", shape.Name, shape.Revision)
			}
		}

		old, err = db.GetRevision(ctx, tx, shape.ID, req.Revision)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	if template {
		err = a.checkLXDHas(ref.Project, rollout.PinnedTemplate(*old), req.Revision)
		if err != nil {
			return response.SmartError(err)
		}
	}

	by := rest.RequestorFromContext(r.Context())
	var deploymentID int64
	var result api.DeploymentShapeRollback
	err = refs.InShapeTx(r.Context(), a.db, ref, func(ctx context.Context, tx *sql.Tx, id int64, shape *db.Shape) (err error) {
		deploymentID = id
		result, err = rollout.Rollback(ctx, tx, shape, req, template, by)
		if err == nil && dryRun {
			return errDryRun // the plan is the rollback itself, undone
		}

		return err
	})
	if dryRun && errors.Is(err, errDryRun) {
		result.DryRun = true
		result.Message = "dry run, nothing changed: " + result.Message
		result.Changes = rest.ChangesFor(r, result.Changes)
		return response.SyncResponse(result)
	}

	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(by, deploymentID, reporter.ShapeUpdated.Event(ref, nil))
	a.reporter.ShapeRevised(by, ref, deploymentID, result.Revision, result.Rollout)
	result.Changes = rest.ChangesFor(r, result.Changes)
	return response.SyncResponse(result)
}

// errDryRun rolls back the transaction of a dry-run rollback.
var errDryRun = errors.New("dry run")

// checkLXDHas refuses a rollback to a template whose image or profiles LXD no longer has.
func (a revisionsAPI) checkLXDHas(project string, t lxdapi.InstancesPost, revision int) error {
	err := a.lxd.Available()
	if err != nil {
		return err
	}

	source := t.Source
	if source.Type == "image" && source.Server == "" {
		// LXD makes instances from the fingerprint when there is one (a pinned image).
		image := source.Alias
		switch {
		case source.Fingerprint != "":
			image = source.Fingerprint
			_, err = a.lxd.Image(project, source.Fingerprint)
		case source.Alias != "":
			_, err = a.lxd.ImageAlias(project, source.Alias)
		}

		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			return lxdapi.StatusErrorf(http.StatusBadRequest, "revision %d uses image %q, which LXD no longer has: import it again, or roll back to another revision", revision, image)
		}

		if err != nil {
			return err
		}
	}

	for _, profile := range t.Profiles {
		_, err = a.lxd.Profile(project, profile)
		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			return lxdapi.StatusErrorf(http.StatusBadRequest, "revision %d uses profile %q, which LXD no longer has: create it again, or roll back to another revision", revision, profile)
		}

		if err != nil {
			return err
		}
	}

	return nil
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

	var entries []api.DeploymentActivity
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		filter.DeploymentID, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		entries, err = db.GetActivity(ctx, tx, filter)
		return err
	})
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
