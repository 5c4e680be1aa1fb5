package main

import (
	"net/http"
	"net/url"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/observed"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// instancesAPI serves the governor API: .../shapes/{shape}/instances. Launches and deletes
// go through the fleet, which holds the bound check.
type instancesAPI struct {
	db    *db.Cluster
	lxd   *backend.LXD
	fleet *fleet.Fleet

	// usage is the observed snapshot of LXD's usage.
	usage *observed.Snapshot
}

func (a instancesAPI) list(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	// LXD renders the shape's instances while the rows are read.
	var listing fleet.Listing
	var clientErr error
	callStart := time.Now()
	if level > 0 {
		listing, clientErr = a.fleet.StartListing(ref, callStart)
	}

	rows, latest, err := fleet.ShapeInstances(r.Context(), a.db, ref)
	if err != nil {
		return response.SmartError(err)
	}

	if level == 0 {
		urls := make([]string, 0, len(rows))
		for _, row := range rows {
			urls = append(urls, api.DeploymentShapeInstanceURL(ref.Project, ref.Name, ref.Shape, row.Name))
		}

		return response.SyncResponse(urls)
	}

	// Usage comes from the observed snapshot, which says when it was read (sampled_at).
	usageFor := a.usage.StartListing(ref.Project, len(rows) > 0, callStart)
	live, err := fleet.LiveStatuses(listing, clientErr, rows)
	usage := usageFor()
	online := err == nil
	result := make([]api.DeploymentInstance, 0, len(rows))
	for _, row := range rows {
		var lxdInstance *lxdapi.Instance
		instance, ok := live[row.Name]
		if ok {
			lxdInstance = &instance
		}

		shown := fleet.InstanceView(row, latest, lxdInstance, online)
		if u, ok := usage.ByName[row.Name]; ok && lxdInstance != nil && lxdInstance.Status == "Running" {
			sampled := usage.At.UTC()
			u.SampledAt = &sampled
			shown.Usage = &u
		}

		fleet.WithLocation(&shown, row, lxdInstance, a.lxd.Cluster())
		result = append(result, rest.InstanceFor(r, shown))
	}

	return response.SyncResponse(result)
}

func (a instancesAPI) get(r *http.Request) response.Response {
	ref, err := instanceFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	result, err := a.fleet.ShowInstance(r.Context(), ref)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(rest.InstanceFor(r, result))
}

func (a instancesAPI) create(r *http.Request) response.Response {
	shape, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	// The URL names the new instance: a bad name is bad input (400), not a missing object.
	name, err := url.PathUnescape(mux.Vars(r)["instance"])
	if err == nil {
		err = validate.Name("instance", name)
	}

	if err != nil {
		return response.SmartError(rest.BadRequest(err))
	}

	ref := refs.InstanceRef{ShapeRef: shape, Instance: name}
	// The body is optional; when given it must agree with the URL.
	var req api.DeploymentInstancesPost
	err = rest.DecodeOptionalBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	if (req.InstanceName != "" && req.InstanceName != ref.Instance) || (req.DeploymentShapeName != "" && req.DeploymentShapeName != ref.Shape) {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "the body names %s/%s but the URL %s/%s: leave the body empty or make them agree", req.DeploymentShapeName, req.InstanceName, ref.Shape, ref.Instance))
	}

	op, err := a.fleet.StartLaunch(r.Context(), ref, fleet.Change{By: rest.RequestorFromContext(r.Context()), Why: "governor API"})
	if err != nil {
		return response.SmartError(err)
	}

	return response.AsyncResponse(op.URL(), op.API())
}

func (a instancesAPI) delete(r *http.Request) response.Response {
	ref, err := instanceFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	op, err := a.fleet.StartDelete(r.Context(), ref, fleet.Change{By: rest.RequestorFromContext(r.Context()), Why: "governor API"})
	if err != nil {
		return response.SmartError(err)
	}

	return response.AsyncResponse(op.URL(), op.API())
}

func (a instancesAPI) putState(r *http.Request) response.Response {
	ref, err := instanceFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req lxdapi.InstanceStatePut
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	op, err := a.fleet.StartStateChange(r.Context(), ref, req, rest.RequestorFromContext(r.Context()))
	if err != nil {
		return response.SmartError(err)
	}

	return response.AsyncResponse(op.URL(), op.API())
}
