package main

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// shapeListResponse answers a collection GET below a shape (its revisions, its rollouts):
// read lists the rows in the transaction that reads the shape, then rest.ListResponse
// shows them.
func shapeListResponse[R any, T any](r *http.Request, cluster *db.Cluster, read func(ctx context.Context, tx *sql.Tx, shape *db.Shape) ([]R, error), url func(ref refs.ShapeRef, row R) string, object func(R) T) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	var rows []R
	err = refs.InShapeTx(r.Context(), cluster, ref, func(ctx context.Context, tx *sql.Tx, _ int64, shape *db.Shape) (err error) {
		rows, err = read(ctx, tx, shape)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	return rest.ListResponse(level, rows, func(row R) string { return url(ref, row) }, object)
}
