package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
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

// Vertical scaling (doc/api.md, "Resizing"): PUT .../shapes/{shape}/resources sets new
// limits in the shape's template, as a revision with cause resize, and starts an operation
// that applies them live to the running instances (fleet.Resizer).

// resizeAPI serves /1.0/deployments/{deployment}/shapes/{shape}/resources.
type resizeAPI struct {
	db       *db.Cluster
	lxd      *backend.LXD
	ops      *operations.Manager
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
	admin := auth.CallerFromContext(r.Context()).IsAdmin()
	var target fleet.ResizeTarget
	var revision int
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		target, revision, err = resizeShape(ctx, tx, ref, req, by, admin)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	source := api.DeploymentShapeURL(ref.Project, ref.Name, ref.Shape)
	a.reporter.Send(by, target.DeploymentID, reporter.ShapeResized.Event(ref, nil))
	a.reporter.ShapeRevised(by, ref, target.DeploymentID, revision, 0)
	resizer := fleet.Resizer{DB: a.db, Conn: a.lxd.Conn, Resized: a.reportInstance(by, ref, target.DeploymentID)}
	op := a.ops.Start(operations.Args{
		Description:  fmt.Sprintf("Resizing shape %s (revision %d)", ref.Shape, revision),
		Project:      ref.Project,
		DeploymentID: target.DeploymentID,
		Resources:    map[string][]string{"deployment_shapes": {source}},
		Run: func(ctx context.Context, op *operations.Operation) error {
			_, err := resizer.Run(ctx, target, func(results map[string]api.DeploymentResizeResult, round int) {
				copied := make(map[string]api.DeploymentResizeResult, len(results))
				for name, result := range results {
					copied[name] = result
				}

				op.SetMetadata(map[string]any{"revision": revision, "round": round, "instances": copied})
			})
			return err
		},
	})

	// What the operation leaves refused is the in-place pass's from then on: poked once the
	// operation has ended (while it runs, the pass leaves the shape to it).
	go func() {
		op.Wait(context.Background(), -1)
		a.inPlace.Poke()
	}()

	return response.AsyncResponse(op.URL(), op.API())
}

// reportInstance says what a resize did to one instance: /1.0/events, the governor's
// webhook (with the reason) and /1.0/metrics.
func (a resizeAPI) reportInstance(by api.DeploymentRequestor, ref refs.ShapeRef, deploymentID int64) func(row db.Instance, result api.DeploymentResizeResult) {
	return func(row db.Instance, result api.DeploymentResizeResult) {
		action := reporter.InstanceResized
		if result.Result != api.ResizeApplied {
			action = reporter.InstanceResizeRefused
		}

		a.reporter.Metrics().Resize(ref.Project, ref.Name, ref.Shape, result.Result)
		a.reporter.Send(by, deploymentID, action.Event(refs.InstanceRef{ShapeRef: ref, Instance: row.Name}, nil))
		a.reporter.Notify(context.Background(), deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(action), Shape: ref.Shape, Instance: row.Name, Reason: result.Reason})
	}
}

// resizeShape checks a resize against the shape's resource_bounds and stores it, with its
// revision, in the caller's transaction: the check and the write cannot be split by another
// change, as the horizontal bound check in the reservation. admin says the caller is an
// admin, who may resize a limit the shape does not bound (shapes.Resize).
func resizeShape(ctx context.Context, tx *sql.Tx, ref refs.ShapeRef, req api.DeploymentShapeResourcesPut, by api.DeploymentRequestor, admin bool) (fleet.ResizeTarget, int, error) {
	deploymentID, shape, err := refs.ShapeInTx(ctx, tx, ref)
	if err != nil {
		return fleet.ResizeTarget{}, 0, err
	}

	put, err := shapes.Resize(shape.Writable(), req, !admin)
	if err != nil {
		return fleet.ResizeTarget{}, 0, err
	}

	err = validate.Shape(put)
	if err != nil {
		return fleet.ResizeTarget{}, 0, rest.BadRequest(err)
	}

	err = db.UpdateShape(ctx, tx, shape.ID, put)
	if err != nil {
		return fleet.ResizeTarget{}, 0, err
	}

	notes := req.Reason
	if notes == "" {
		notes = describeResize(req)
	}

	revised, err := rollout.RecordRevision(ctx, tx, deploymentID, shape.ID, shape, put, rollout.RevisionArgs{Cause: rollout.CauseResize, By: by, Notes: notes, Always: true, InPlace: true})
	if err != nil {
		return fleet.ResizeTarget{}, 0, err
	}

	by, err = fleet.WithKey(ctx, tx, by, deploymentID)
	if err != nil {
		return fleet.ResizeTarget{}, 0, err
	}

	// As many at once as a rolling rollout may have unavailable (at least one): an update
	// in place keeps instances serving, so this paces LXD, not availability.
	batch := 1
	resolved, err := shapes.ResolveRollout(put.Rollout, shape.ScalingCurrent)
	if err == nil {
		batch = max(1, resolved.Unavailable)
	}

	return fleet.ResizeTarget{DeploymentID: deploymentID, ShapeID: shape.ID, Project: ref.Project, Shape: shape.Name, By: by, Batch: batch}, revised.Revision, nil
}

// describeResize writes a resize's limits for the activity log.
func describeResize(req api.DeploymentShapeResourcesPut) string {
	out := ""
	for _, key := range validate.ResourceKeys {
		if value, ok := req.Limits()[key]; ok {
			if out != "" {
				out += " "
			}

			out += key + "=" + value
		}
	}

	return out
}
