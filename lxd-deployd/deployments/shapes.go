package deployments

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// CreateShape validates and stores a new shape in a deployment, with its first revision,
// and returns the deployment's id.
func CreateShape(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, req api.DeploymentShapesPost, args rollout.RevisionArgs) (int64, error) {
	err := validate.Name("shape", req.Name)
	if err != nil {
		return 0, badRequest(err)
	}

	if req.Config == nil {
		req.Config = map[string]string{}
	}

	err = validate.Shape(req.DeploymentShapePut)
	if err != nil {
		return 0, badRequest(err)
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

// GetShape reads one shape in its own transaction.
func GetShape(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef) (*db.Shape, error) {
	var shape *db.Shape
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		_, shape, err = refs.ShapeInTx(ctx, tx, ref)
		return err
	})

	return shape, err
}

// ShapeUpdate is what UpdateShape changed: the shape before, its new writable fields and
// the revision (and rollout) recorded.
type ShapeUpdate struct {
	DeploymentID int64
	Before       api.DeploymentShape
	After        api.DeploymentShapePut
	Revised      rollout.Revised
}

// UpdateShape replaces a shape's writable fields with what edit makes of the current ones
// (edit checks the request's ETag and reads its body), validated, and records the
// revision. A new instance template only applies to instances created afterwards (seed
// 004's review decision).
func UpdateShape(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef, edit func(current api.DeploymentShapePut) (api.DeploymentShapePut, error), args rollout.RevisionArgs) (ShapeUpdate, error) {
	var out ShapeUpdate
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, current, err := refs.ShapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		out.DeploymentID = deploymentID
		put, err := edit(current.Writable())
		if err != nil {
			return err
		}

		if put.Config == nil {
			put.Config = map[string]string{}
		}

		err = validate.Shape(put)
		if err != nil {
			return badRequest(err)
		}

		out.Before = current.DeploymentShape
		out.After = put
		err = db.UpdateShape(ctx, tx, current.ID, put)
		if err != nil {
			return err
		}

		out.Revised, err = rollout.RecordRevision(ctx, tx, deploymentID, current.ID, current, put, args)
		return err
	})

	return out, err
}

// RenameShape renames a shape and returns its deployment's id.
func RenameShape(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef, name string) (int64, error) {
	err := validate.Name("shape", name)
	if err != nil {
		return 0, badRequest(err)
	}

	var deploymentID int64
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		id, err := db.GetShapeID(ctx, tx, deploymentID, ref.Shape)
		if err != nil {
			return err
		}

		return db.RenameShape(ctx, tx, deploymentID, id, name)
	})

	return deploymentID, err
}

// DeleteShape deletes a shape and, with force, its instances (the fleet's
// DeleteWithInstances refuses otherwise while it has any). It returns the deployment's id.
func DeleteShape(ctx context.Context, cluster *db.Cluster, f *fleet.Fleet, ref refs.ShapeRef, by api.DeploymentRequestor, force bool) (int64, error) {
	var deploymentID int64
	var shape *db.Shape
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		deploymentID, shape, err = refs.ShapeInTx(ctx, tx, ref)
		return err
	})
	if err != nil {
		return 0, err
	}

	err = f.DeleteWithInstances(ctx, by, fmt.Sprintf("shape %q", ref.Shape), force,
		func(ctx context.Context, tx *sql.Tx) ([]db.Instance, error) {
			return db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
		},
		func(ctx context.Context, tx *sql.Tx) error { return db.DeleteShape(ctx, tx, shape.ID) })

	return deploymentID, err
}

// Shapes reads the shapes of the deployment ref names.
func Shapes(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef) ([]db.Shape, error) {
	var shapes []db.Shape
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		shapes, err = db.GetShapes(ctx, tx, db.ShapeFilter{DeploymentID: id})
		return err
	})

	return shapes, err
}
