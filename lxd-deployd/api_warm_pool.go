package main

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// warmPoolList serves GET .../shapes/{shape}/warm-pool: the shape's pool instances.
func (a shapesAPI) warmPoolList(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var rows []db.PoolInstance
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := refs.ShapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		rows, err = db.GetPoolInstances(ctx, tx, shape.ID)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	result := make([]api.DeploymentShapeWarmPoolInstance, 0, len(rows))
	for _, row := range rows {
		result = append(result, api.DeploymentShapeWarmPoolInstance{Name: row.Name, State: row.State, TemplateHash: row.TemplateHash, CreatedAt: row.CreatedAt})
	}

	return response.SyncResponse(result)
}
