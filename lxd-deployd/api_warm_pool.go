package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// warmPoolList serves GET .../shapes/{shape}/warm-pool: the shape's pool instances.
func (a shapesAPI) warmPoolList(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	result, err := fleet.PoolInstances(r.Context(), a.db, ref)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(result)
}
