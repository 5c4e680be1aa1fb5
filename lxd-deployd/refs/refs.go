// Package refs names the objects a request or a background step is about: a deployment, a
// shape of it, an instance of that shape. Package main reads them from a request's path and
// ?project=; the engines (fleet, rollout) and the reporter pass them around instead of the
// *http.Request.
package refs

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// DeploymentRef is a deployment: its project and name.
type DeploymentRef struct {
	Project string
	Name    string
}

// ShapeRef is a shape of a deployment.
type ShapeRef struct {
	DeploymentRef
	Shape string
}

// InstanceRef is an instance of a shape.
type InstanceRef struct {
	ShapeRef
	Instance string
}

// Instance names the instance of a record.
func Instance(row db.Instance) InstanceRef {
	return InstanceRef{ShapeRef: ShapeRef{DeploymentRef: DeploymentRef{Project: row.Project, Name: row.Deployment}, Shape: row.Shape}, Instance: row.Name}
}

// ShapeInTx reads the deployment id and the shape ref names inside a transaction.
func ShapeInTx(ctx context.Context, tx *sql.Tx, ref ShapeRef) (int64, *db.Shape, error) {
	deploymentID, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
	if err != nil {
		return 0, nil, err
	}

	shape, err := db.GetShape(ctx, tx, deploymentID, ref.Shape)
	return deploymentID, shape, err
}

// InShapeTx runs f in one transaction with the deployment id and the shape ref names, read
// in that same transaction, so that what f reads or writes belongs to the shape it was given.
func InShapeTx(ctx context.Context, cluster *db.Cluster, ref ShapeRef, f func(ctx context.Context, tx *sql.Tx, deploymentID int64, shape *db.Shape) error) error {
	return cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, shape, err := ShapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		return f(ctx, tx, deploymentID, shape)
	})
}
