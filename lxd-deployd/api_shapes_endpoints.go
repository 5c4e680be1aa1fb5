package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/doorkeeper"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
)

// endpointsAPI serves a shape's endpoints (doc/traffic.md).
type endpointsAPI struct {
	db  *db.Cluster
	lxd *backend.LXD

	// stats are the door's last figures by frontdoor key (the keeper's; none without a door).
	stats func() map[string]frontdoor.FrontendStats
}

// get serves GET .../shapes/{shape}/endpoints: every instance with its address, port and
// state (serving, draining, not-ready), computed now, with the door's last figures for it.
func (a endpointsAPI) get(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	endpoints, err := doorkeeper.ShapeEndpoints(r.Context(), a.db, a.lxd, ref)
	if err != nil {
		return response.SmartError(err)
	}

	if a.stats != nil {
		endpoints = doorkeeper.WithStats(endpoints, a.stats(), frontdoor.Key(ref.Project, ref.Name, ref.Shape))
	}

	return response.SyncResponse(endpoints)
}
