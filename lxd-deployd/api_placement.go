package main

import (
	"net/http"
	"net/url"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// placementAPI serves drain and rebalance (doc/placement.md): thin handlers over the
// fleet's operations.
type placementAPI struct {
	fleet *fleet.Fleet
}

// drain serves POST /1.0/lxd-members/{member}/drain: every managed instance leaves the LXD
// member, shape by shape, within each shape's bounds.
func (a placementAPI) drain(r *http.Request) response.Response {
	member, err := url.PathUnescape(mux.Vars(r)["member"])
	if err != nil || member == "" {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "name the LXD cluster member to drain"))
	}

	op, err := a.fleet.StartDrain(r.Context(), member, rest.RequestorFromContext(r.Context()))
	if err != nil {
		return response.SmartError(err)
	}

	return response.AsyncResponse(op.URL(), op.API())
}

// rebalance serves POST .../shapes/{shape}/rebalance: the shape's spread is restored.
func (a placementAPI) rebalance(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	op, err := a.fleet.StartRebalanceOf(r.Context(), ref, rest.RequestorFromContext(r.Context()))
	if err != nil {
		return response.SmartError(err)
	}

	return response.AsyncResponse(op.URL(), op.API())
}
