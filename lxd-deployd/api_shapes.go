package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
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

	var shapes []db.Shape
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		shapes, err = db.GetShapes(ctx, tx, db.ShapeFilter{DeploymentID: id})
		return err
	})
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

	deploymentID, err := createShape(r.Context(), a.db, ref, req, rollout.RevisionArgs{Cause: rollout.CauseAPI, By: rest.RequestorFromContext(r.Context()), Notes: notes})
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.ShapeCreated(r.Context(), rest.RequestorFromContext(r.Context()), ref, deploymentID, req.Name, req.DeploymentShapePut)
	return response.SyncResponseLocation(nil, api.DeploymentShapeURL(ref.Project, ref.Name, req.Name))
}

// createShape validates and stores a new shape in a deployment, and returns the
// deployment's id.
func createShape(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, req api.DeploymentShapesPost, args rollout.RevisionArgs) (int64, error) {
	err := validate.Name("shape", req.Name)
	if err != nil {
		return 0, rest.BadRequest(err)
	}

	if req.Config == nil {
		req.Config = map[string]string{}
	}

	err = validate.Shape(req.DeploymentShapePut)
	if err != nil {
		return 0, rest.BadRequest(err)
	}

	var id int64
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		shapeID, err := db.CreateShape(ctx, tx, id, req)
		if err != nil {
			return err
		}

		_, err = rollout.RecordRevision(ctx, tx, id, shapeID, nil, req.DeploymentShapePut, args)
		return err
	})

	return id, err
}

// getShape reads one shape in its own transaction.
func getShape(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef) (*db.Shape, error) {
	var shape *db.Shape
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		shape, err = db.GetShape(ctx, tx, id, ref.Shape)
		return err
	})

	return shape, err
}

func (a shapesAPI) get(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	shape, err := getShape(r.Context(), a.db, ref)
	if err != nil {
		return response.SmartError(err)
	}

	shape.PlacementStatus = placementStatus(r.Context(), a.db, a.lxd.Cluster(), shape)
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

	var deploymentID int64
	var before, after api.DeploymentShape
	var revised rollout.Revised
	args := rollout.RevisionArgs{Cause: rollout.CauseAPI, By: rest.RequestorFromContext(r.Context()), Notes: notes}
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		current, err := db.GetShape(ctx, tx, deploymentID, ref.Shape)
		if err != nil {
			return err
		}

		err = response.CheckETag(r, current.Writable())
		if err != nil {
			return err
		}

		var put api.DeploymentShapePut
		if patch {
			put, err = rest.PatchBase(current.Writable())
			if err != nil {
				return err
			}
		}

		err = rest.UnmarshalBody(body, &put)
		if err != nil {
			return err
		}

		if put.Config == nil {
			put.Config = map[string]string{}
		}

		err = validate.Shape(put)
		if err != nil {
			return rest.BadRequest(err)
		}

		before = current.DeploymentShape
		after = current.DeploymentShape
		after.DeploymentShapePut = put
		after.Status = api.ShapeStatus(after.ScalingCurrent, put.ScalingMinimum, put.ScalingMaximum)
		err = db.UpdateShape(ctx, tx, current.ID, put)
		if err != nil {
			return err
		}

		revised, err = rollout.RecordRevision(ctx, tx, deploymentID, current.ID, current, put, args)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.ShapeUpdated(r.Context(), args.By, ref.DeploymentRef, deploymentID, before, after.DeploymentShapePut)
	a.reporter.ShapeRevised(args.By, ref, deploymentID, revised.Revision, revised.Rollout)
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

	err = validate.Name("shape", req.Name)
	if err != nil {
		return response.SmartError(rest.BadRequest(err))
	}

	var deploymentID int64
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		id, err := db.GetShapeID(ctx, tx, deploymentID, ref.Shape)
		if err != nil {
			return err
		}

		return db.RenameShape(ctx, tx, deploymentID, id, req.Name)
	})
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

	var deploymentID int64
	var shape *db.Shape
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, shape, err = refs.ShapeInTx(ctx, tx, ref)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	err = a.fleet.DeleteWithInstances(r.Context(), rest.RequestorFromContext(r.Context()), fmt.Sprintf("shape %q", ref.Shape), rest.ForceParam(r),
		func(ctx context.Context, tx *sql.Tx) ([]db.Instance, error) {
			return db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
		},
		func(ctx context.Context, tx *sql.Tx) error { return db.DeleteShape(ctx, tx, shape.ID) })
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.ShapeDeleted(rest.RequestorFromContext(r.Context()), ref.DeploymentRef, deploymentID, ref.Shape)
	return response.EmptySyncResponse()
}
