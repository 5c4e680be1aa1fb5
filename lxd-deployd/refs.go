package main

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// The objects a request is about, read from its path (names unescaped and validated by
// pathName) and ?project=. Handlers, operations and background work pass these refs around
// instead of the *http.Request.

// deploymentRef is the deployment a request is about, from its path and ?project=.
type deploymentRef struct {
	project string
	name    string
}

func deploymentFromRequest(r *http.Request) (deploymentRef, error) {
	project, err := projectParam(r)
	if err != nil {
		return deploymentRef{}, err
	}

	name, err := pathName(r, "deployment", "deployment")
	if err != nil {
		return deploymentRef{}, err
	}

	return deploymentRef{project: project, name: name}, nil
}

// shapeRef is the shape a request is about.
type shapeRef struct {
	deploymentRef
	shape string
}

func shapeFromRequest(r *http.Request) (shapeRef, error) {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return shapeRef{}, err
	}

	name, err := pathName(r, "shape", "shape")
	if err != nil {
		return shapeRef{}, err
	}

	return shapeRef{deploymentRef: ref, shape: name}, nil
}

// instanceRef is the instance a request is about.
type instanceRef struct {
	shapeRef
	instance string
}

func instanceFromRequest(r *http.Request) (instanceRef, error) {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return instanceRef{}, err
	}

	name, err := pathName(r, "instance", "instance")
	if err != nil {
		return instanceRef{}, err
	}

	return instanceRef{shapeRef: ref, instance: name}, nil
}

// shapeInTx reads the deployment id and the shape of a request inside a transaction.
func shapeInTx(ctx context.Context, tx *sql.Tx, ref shapeRef) (int64, *db.Shape, error) {
	deploymentID, err := db.GetDeploymentID(ctx, tx, ref.project, ref.name)
	if err != nil {
		return 0, nil, err
	}

	shape, err := db.GetShape(ctx, tx, deploymentID, ref.shape)
	return deploymentID, shape, err
}

// inShapeTx runs f in one transaction with the deployment id and the shape ref names, read
// in that same transaction, so that what f reads or writes belongs to the shape it was given.
func inShapeTx(ctx context.Context, cluster *db.Cluster, ref shapeRef, f func(ctx context.Context, tx *sql.Tx, deploymentID int64, shape *db.Shape) error) error {
	return cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, shape, err := shapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		return f(ctx, tx, deploymentID, shape)
	})
}

// manifestFromRequest returns the deployment and manifest a request is about.
func manifestFromRequest(r *http.Request) (deploymentRef, string, error) {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return deploymentRef{}, "", err
	}

	name, err := pathName(r, "manifest", "manifest")
	if err != nil {
		return deploymentRef{}, "", err
	}

	return ref, name, nil
}
