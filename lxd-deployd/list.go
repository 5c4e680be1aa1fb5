package main

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// listResponse answers a collection GET the LXD way: the objects' URLs without recursion,
// the objects themselves with recursion=1.
func listResponse[R any, T any](level int, rows []R, url func(R) string, object func(R) T) response.Response {
	if level == 0 {
		urls := make([]string, 0, len(rows))
		for _, row := range rows {
			urls = append(urls, url(row))
		}

		return response.SyncResponse(urls)
	}

	objects := make([]T, 0, len(rows))
	for _, row := range rows {
		objects = append(objects, object(row))
	}

	return response.SyncResponse(objects)
}

// shapeListResponse answers a collection GET below a shape (its revisions, its rollouts):
// read lists the rows in the transaction that reads the shape, then listResponse shows them.
func shapeListResponse[R any, T any](r *http.Request, cluster *db.Cluster, read func(ctx context.Context, tx *sql.Tx, shape *db.Shape) ([]R, error), url func(ref refs.ShapeRef, row R) string, object func(R) T) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := recursion(r)
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

	return listResponse(level, rows, func(row R) string { return url(ref, row) }, object)
}
