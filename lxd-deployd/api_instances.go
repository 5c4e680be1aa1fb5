package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/observed"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// instancesAPI serves the governor API: .../shapes/{shape}/instances. Launches and deletes
// go through the fleet, which holds the bound check.
type instancesAPI struct {
	db       *db.Cluster
	lxd      *backend.LXD
	ops      *operations.Manager
	fleet    *fleet.Fleet
	reporter *reporter.Reporter

	// usage is the observed snapshot of LXD's usage.
	usage *observed.Snapshot
}

// instanceAPI turns a row (and LXD's view of it, if known) into the API type.
func instanceAPI(row db.Instance, latest int, lxdInstance *lxdapi.Instance, lxdOnline bool) api.DeploymentInstance {
	status := "Unknown"
	switch {
	case lxdInstance != nil:
		status = lxdInstance.Status
	case row.State == db.InstanceCreating:
		status = "Creating"
	case lxdOnline:
		status = "Missing"
	}

	instance := api.DeploymentInstance{
		Name:         row.Name,
		Project:      row.Project,
		Deployment:   row.Deployment,
		Shape:        row.Shape,
		State:        row.State,
		Status:       status,
		CreatedAt:    row.CreatedAt,
		InstanceURL:  api.InstanceURL(row.Project, row.Name),
		TemplateHash: row.TemplateHash,
		Revision:     row.Revision,
		Outdated:     shapes.Outdated(row, latest),
	}

	if lxdInstance != nil && lxdInstance.Config != nil {
		instance.Limits = fleet.LimitsOf(lxdInstance.Config)
	}

	withLifecycle(&instance, row)
	return instance
}

func (a instancesAPI) list(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	// LXD renders the shape's instances while the rows are read.
	var listing func(want []string) (map[string]lxdapi.Instance, error)
	var clientErr error
	callStart := time.Now()
	if level > 0 {
		// A request that fails before it waits for the listing leaves it to end unread.
		var listed func(want []string) (map[string]lxdapi.Instance, error)
		listed, clientErr = a.lxd.StartShapeListing(ref.Project, ref.Name, ref.Shape)
		if clientErr == nil {
			listing = func(want []string) (map[string]lxdapi.Instance, error) {
				live, err := listed(want)
				a.reporter.Metrics().LXDCall("list", time.Since(callStart), err)
				return live, err
			}
		}
	}

	var rows []db.Instance
	var latest int
	err = a.db.Read(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := refs.ShapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		latest = shape.Revision
		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
		return err
	})
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
	live, err := a.liveStatuses(listing, clientErr, rows)
	usage := usageFor()
	online := err == nil
	result := make([]api.DeploymentInstance, 0, len(rows))
	for _, row := range rows {
		var lxdInstance *lxdapi.Instance
		instance, ok := live[row.Name]
		if ok {
			lxdInstance = &instance
		}

		shown := instanceAPI(row, latest, lxdInstance, online)
		if u, ok := usage.ByName[row.Name]; ok && lxdInstance != nil && lxdInstance.Status == "Running" {
			sampled := usage.At.UTC()
			u.SampledAt = &sampled
			shown.Usage = &u
		}

		withLocation(&shown, row, lxdInstance, a.lxd.Cluster())
		result = append(result, instanceFor(r, shown))
	}

	return response.SyncResponse(result)
}

// liveStatuses is LXD's status of a shape's instances: one listing of the instances LXD
// holds as the shape's, never one call per instance, decoding only the fields shown (the
// project's listing when that misses a created row: a renamed shape, an instance deleted
// behind the daemon's back). listing is the listing started, nil when LXD is unavailable
// for clientErr.
func (a instancesAPI) liveStatuses(listing func(want []string) (map[string]lxdapi.Instance, error), clientErr error, rows []db.Instance) (map[string]lxdapi.Instance, error) {
	if listing == nil {
		return nil, clientErr
	}

	return waitListing(listing, shapes.CreatedNames(rows), listingWait)
}

// listingWait is how long a listing waits for LXD's answer. A frozen or stalled LXD
// answers nothing, and the listing then shows the records without LXD's status, as when
// LXD is down, rather than hang its caller (issue 31: 30 s and a client timeout).
const listingWait = 10 * time.Second

// waitListing runs listing for want, giving up after limit; the listing itself then ends
// unread when LXD answers.
func waitListing(listing func(want []string) (map[string]lxdapi.Instance, error), want []string, limit time.Duration) (map[string]lxdapi.Instance, error) {
	type answer struct {
		live map[string]lxdapi.Instance
		err  error
	}

	answered := make(chan answer, 1)
	go func() {
		live, err := listing(want)
		answered <- answer{live, err}
	}()

	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case a := <-answered:
		return a.live, a.err
	case <-timer.C:
		return nil, lxdapi.StatusErrorf(http.StatusServiceUnavailable, "LXD did not answer the listing within %s", limit)
	}
}

func (a instancesAPI) get(r *http.Request) response.Response {
	ref, err := instanceFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var row *db.Instance
	var latest int
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := refs.ShapeInTx(ctx, tx, ref.ShapeRef)
		if err != nil {
			return err
		}

		latest = shape.Revision
		row, err = db.GetInstance(ctx, tx, shape.ID, ref.Instance)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	err = a.lxd.Available()
	if err != nil {
		return response.SyncResponse(instanceFor(r, instanceAPI(*row, latest, nil, false)))
	}

	lxdInstance, state, err := a.lxd.InstanceWithState(ref.Project, row.Name)
	if err != nil {
		result := instanceAPI(*row, latest, nil, !lxdapi.StatusErrorCheck(err, http.StatusServiceUnavailable))
		withLocation(&result, *row, nil, a.lxd.Cluster())
		return response.SyncResponse(instanceFor(r, result))
	}

	result := instanceAPI(*row, latest, lxdInstance, true)
	withLocation(&result, *row, lxdInstance, a.lxd.Cluster())
	if state != nil {
		result.LiveState = state
	}

	return response.SyncResponse(instanceFor(r, result))
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
		return response.SmartError(badRequest(err))
	}

	ref := refs.InstanceRef{ShapeRef: shape, Instance: name}
	// The body is optional; when given it must agree with the URL.
	var req api.DeploymentInstancesPost
	err = decodeOptionalBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	if (req.InstanceName != "" && req.InstanceName != ref.Instance) || (req.DeploymentShapeName != "" && req.DeploymentShapeName != ref.Shape) {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "the body names %s/%s but the URL %s/%s: leave the body empty or make them agree", req.DeploymentShapeName, req.InstanceName, ref.Shape, ref.Instance))
	}

	op, err := a.fleet.StartLaunch(r.Context(), ref, fleet.Change{By: requestorFromContext(r.Context()), Why: "governor API"})
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

	op, err := a.fleet.StartDelete(r.Context(), ref, fleet.Change{By: requestorFromContext(r.Context()), Why: "governor API"})
	if err != nil {
		return response.SmartError(err)
	}

	return response.AsyncResponse(op.URL(), op.API())
}

// instanceActions are the state changes a governor may ask for.
var instanceActions = map[string]bool{"start": true, "stop": true, "restart": true, "freeze": true, "unfreeze": true}

func (a instancesAPI) putState(r *http.Request) response.Response {
	ref, err := instanceFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req lxdapi.InstanceStatePut
	err = decodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	if !instanceActions[req.Action] {
		return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "action %q is not valid: use start, stop, restart, freeze or unfreeze", req.Action))
	}

	err = a.lxd.Available()
	if err != nil {
		return response.SmartError(err)
	}

	var deploymentID int64
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		var shape *db.Shape
		deploymentID, shape, err = refs.ShapeInTx(ctx, tx, ref.ShapeRef)
		if err != nil {
			return err
		}

		row, err := db.GetInstance(ctx, tx, shape.ID, ref.Instance)
		if err != nil {
			return err
		}

		if row.State != db.InstanceCreated {
			return lxdapi.StatusErrorf(http.StatusConflict, "instance %s is %s: its state can change once it is created", row.Name, row.State)
		}

		return nil
	})
	if err != nil {
		return response.SmartError(err)
	}

	by := requestorFromContext(r.Context())
	op := a.ops.Start(operations.Args{
		Description:  fmt.Sprintf("Changing state of instance %s (%s)", ref.Instance, req.Action),
		Project:      ref.Project,
		DeploymentID: deploymentID,
		Resources:    fleet.InstanceResources(ref),
		Run: func(ctx context.Context, op *operations.Operation) error {
			callStart := time.Now()
			err := a.lxd.SetInstanceState(ctx, ref.Project, ref.Instance, req)
			a.reporter.Metrics().LXDCall("state", time.Since(callStart), err)
			if err == nil {
				a.reporter.Send(by, deploymentID, reporter.InstanceUpdated.Event(ref, nil))
				if req.Action == "stop" {
					a.reporter.InstanceChanged(ctx, deploymentID, reporter.InstanceStopped, ref.Shape, ref.Instance)
				}
			}

			return err
		},
	})

	return response.AsyncResponse(op.URL(), op.API())
}
