package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// instancesAPI serves the governor API: .../shapes/{shape}/instances.
type instancesAPI struct {
	db        *db.Cluster
	lxd       *backend.LXD
	ops       *operations.Manager
	inflight  *inflight
	sockets   governorSockets
	lifecycle lifecycle

	// owner names this daemon on the instance records it changes.
	owner string
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

// checkGrow refuses a create that would take the shape above its maximum.
func checkGrow(shape *db.Shape) error {
	if shape.ScalingCurrent+1 > shape.ScalingMaximum {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is at its scaling maximum (%d): raise scaling_maximum or delete an instance first", shape.Name, shape.ScalingMaximum)
	}

	return nil
}

// checkShrink refuses a delete that would take the shape below its minimum.
func checkShrink(shape *db.Shape) error {
	if shape.ScalingCurrent-1 < shape.ScalingMinimum {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is at its scaling minimum (%d): lower scaling_minimum or launch an instance first", shape.Name, shape.ScalingMinimum)
	}

	return nil
}

// instanceAPI turns a row (and LXD's view of it, if known) into the API type.
func instanceAPI(row db.Instance, lxdInstance *lxdapi.Instance, lxdOnline bool) api.DeploymentInstance {
	status := "Unknown"
	switch {
	case lxdInstance != nil:
		status = lxdInstance.Status
	case row.State == db.InstanceCreating:
		status = "Creating"
	case lxdOnline:
		status = "Missing"
	}

	return api.DeploymentInstance{
		Name:         row.Name,
		Project:      row.Project,
		Deployment:   row.Deployment,
		Shape:        row.Shape,
		State:        row.State,
		Status:       status,
		CreatedAt:    row.CreatedAt,
		InstanceURL:  api.InstanceURL(row.Project, row.Name),
		TemplateHash: row.TemplateHash,
	}
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

	var rows []db.Instance
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := shapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	if level == 0 {
		urls := make([]string, 0, len(rows))
		for _, row := range rows {
			urls = append(urls, api.DeploymentShapeInstanceURL(ref.project, ref.name, ref.shape, row.Name))
		}

		return response.SyncResponse(urls)
	}

	// One LXD listing for every instance, never one call per instance.
	var live map[string]lxdapi.Instance
	client, err := a.lxd.Client()
	if err == nil && len(rows) > 0 {
		live, err = backend.ListInstances(client, ref.project)
	}

	online := err == nil
	result := make([]api.DeploymentInstance, 0, len(rows))
	for _, row := range rows {
		var lxdInstance *lxdapi.Instance
		instance, ok := live[row.Name]
		if ok {
			lxdInstance = &instance
		}

		result = append(result, instanceAPI(row, lxdInstance, online))
	}

	return response.SyncResponse(result)
}

func (a instancesAPI) get(r *http.Request) response.Response {
	ref, err := instanceFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var row *db.Instance
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := shapeInTx(ctx, tx, ref.shapeRef)
		if err != nil {
			return err
		}

		row, err = db.GetInstance(ctx, tx, shape.ID, ref.instance)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	client, err := a.lxd.Client()
	if err != nil {
		return response.SyncResponse(instanceAPI(*row, nil, false))
	}

	c := client.UseProject(ref.project)
	lxdInstance, _, err := c.GetInstance(row.Name)
	if err != nil {
		return response.SyncResponse(instanceAPI(*row, nil, !lxdapi.StatusErrorCheck(err, http.StatusServiceUnavailable)))
	}

	result := instanceAPI(*row, lxdInstance, true)
	state, _, err := c.GetInstanceState(row.Name)
	if err == nil {
		result.LiveState = state
	}

	return response.SyncResponse(result)
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

	ref := instanceRef{shapeRef: shape, instance: name}
	body, err := readBody(r)
	if err != nil {
		return response.SmartError(err)
	}

	// The body is optional; when given it must agree with the URL.
	if len(body) > 0 {
		var req api.DeploymentInstancesPost
		err = unmarshalBody(body, &req)
		if err != nil {
			return response.SmartError(err)
		}

		if (req.InstanceName != "" && req.InstanceName != ref.instance) || (req.DeploymentShapeName != "" && req.DeploymentShapeName != ref.shape) {
			return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "the body names %s/%s but the URL %s/%s: leave the body empty or make them agree", req.DeploymentShapeName, req.InstanceName, ref.shape, ref.instance))
		}
	}

	op, err := a.launch(r, ref)
	if err != nil {
		return response.SmartError(err)
	}

	return response.AsyncResponse(op.URL(), op.API())
}

// launch reserves the instance's row after the bound check, in one transaction, then
// creates and starts it in LXD as a background operation. A failed create removes the row.
func (a instancesAPI) launch(r *http.Request, ref instanceRef) (*operations.Operation, error) {
	client, err := a.lxd.Client()
	if err != nil {
		return nil, err
	}

	var deploymentID, rowID int64
	var shape *db.Shape
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, shape, err = shapeInTx(ctx, tx, ref.shapeRef)
		if err != nil {
			return err
		}

		err = checkGrow(shape)
		if err != nil {
			return err
		}

		rowID, err = db.CreateInstance(ctx, tx, ref.project, shape.ID, ref.instance, backend.TemplateHash(shape.InstanceTemplate), a.owner, time.Now())
		if err != nil || shape.Config[configGovernorSocket] != "true" {
			return err
		}

		return db.SetInstanceGovernorSocket(ctx, tx, rowID)
	})
	if err != nil {
		return nil, err
	}

	req := backend.InstanceRequest(shape.InstanceTemplate, ref.instance, ref.name, ref.shape)
	socket := shape.Config[configGovernorSocket] == "true"
	if socket {
		hostPath, err := a.sockets.AddInstance(ref.project, ref.instance)
		if err != nil {
			_ = a.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
				return db.DeleteInstance(ctx, tx, rowID, db.InstanceCreating)
			})

			return nil, err
		}

		withGovernorSocket(&req, hostPath)
	}

	a.inflight.add(ref.project, ref.instance)
	return a.ops.Start(operations.Args{
		Description:   fmt.Sprintf("Creating instance %s of shape %s", ref.instance, ref.shape),
		Project:       ref.project,
		DeploymentID:  deploymentID,
		Resources:     a.resources(ref),
		Uncancellable: true,
		Run: func(ctx context.Context, op *operations.Operation) error {
			defer a.inflight.remove(ref.project, ref.instance)
			return a.finishLaunch(ctx, client, ref, req, rowID, socket, deploymentID, r)
		},
	}), nil
}

// finishLaunch makes the instance in LXD and settles its record: created on success,
// removed when LXD has nothing left of it, kept as creating for reconcile when a failed
// create could not be cleaned up.
func (a instancesAPI) finishLaunch(ctx context.Context, client lxd.InstanceServer, ref instanceRef, req lxdapi.InstancesPost, rowID int64, socket bool, deploymentID int64, r *http.Request) error {
	err := backend.CreateInstance(ctx, client, ref.project, req)
	var leftBehind *backend.LeftBehindError
	if errors.As(err, &leftBehind) {
		return err
	}

	if err != nil {
		if socket {
			a.sockets.RemoveInstance(ref.project, ref.instance)
		}

		_ = a.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
			return db.DeleteInstance(ctx, tx, rowID, db.InstanceCreating)
		})

		return err
	}

	err = a.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		return db.SetInstanceState(ctx, tx, rowID, db.InstanceCreating, db.InstanceCreated, a.owner, time.Now())
	})
	if errors.Is(err, db.ErrInstanceChanged) {
		// The record went away meanwhile (a forced delete): the instance is ours and
		// unrecorded, so it goes too rather than run uncounted.
		_ = backend.DeleteInstance(context.WithoutCancel(ctx), client, ref.project, ref.instance)
		return fmt.Errorf("the record of instance %s was removed while it was being created: the instance was deleted again", ref.instance)
	}

	if err != nil {
		return fmt.Errorf("instance created, but recording it failed (reconcile will adopt it): %w", err)
	}

	a.lifecycle.emit(r, ref.project, deploymentID, lifecycleInstanceCreated, api.DeploymentShapeInstanceURL(ref.project, ref.name, ref.shape, ref.instance))
	a.lifecycle.instanceChanged(ctx, deploymentID, lifecycleInstanceCreated, ref.shape, ref.instance)
	return nil
}

func (a instancesAPI) resources(ref instanceRef) map[string][]string {
	return map[string][]string{
		"instances":         {api.InstanceURL(ref.project, ref.instance)},
		"deployment_shapes": {api.DeploymentShapeURL(ref.project, ref.name, ref.shape)},
	}
}

func (a instancesAPI) delete(r *http.Request) response.Response {
	ref, err := instanceFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	client, err := a.lxd.Client()
	if err != nil {
		return response.SmartError(err)
	}

	var deploymentID int64
	var row *db.Instance
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		var shape *db.Shape
		deploymentID, shape, err = shapeInTx(ctx, tx, ref.shapeRef)
		if err != nil {
			return err
		}

		row, err = db.GetInstance(ctx, tx, shape.ID, ref.instance)
		if err != nil {
			return err
		}

		switch row.State {
		case db.InstanceCreating:
			return lxdapi.StatusErrorf(http.StatusConflict, "instance %s is still being created: wait for its operation to finish", row.Name)
		case db.InstanceDeleting:
			return lxdapi.StatusErrorf(http.StatusConflict, "instance %s is already being deleted", row.Name)
		}

		// A missing instance no longer counts, so removing its record changes no size.
		if row.State != db.InstanceMissing {
			err = checkShrink(shape)
			if err != nil {
				return err
			}
		}

		return db.SetInstanceState(ctx, tx, row.ID, row.State, db.InstanceDeleting, a.owner, time.Now())
	})
	if err != nil {
		return response.SmartError(err)
	}

	a.inflight.add(ref.project, ref.instance)
	op := a.ops.Start(operations.Args{
		Description:   fmt.Sprintf("Deleting instance %s of shape %s", ref.instance, ref.shape),
		Project:       ref.project,
		DeploymentID:  deploymentID,
		Resources:     a.resources(ref),
		Uncancellable: true,
		Run: func(ctx context.Context, op *operations.Operation) error {
			defer a.inflight.remove(ref.project, ref.instance)
			err := backend.DeleteInstance(ctx, client, ref.project, row.Name)
			if err != nil {
				// The instance is still there: it counts again.
				_ = a.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
					return db.SetInstanceState(ctx, tx, row.ID, db.InstanceDeleting, row.State, a.owner, time.Now())
				})

				return err
			}

			a.sockets.RemoveInstance(row.Project, row.Name)
			err = a.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
				return db.DeleteInstance(ctx, tx, row.ID, db.InstanceDeleting)
			})
			if err != nil && !errors.Is(err, db.ErrInstanceChanged) {
				return err
			}

			a.lifecycle.emit(r, ref.project, deploymentID, lifecycleInstanceDeleted, api.DeploymentShapeInstanceURL(ref.project, ref.name, ref.shape, ref.instance))
			a.lifecycle.instanceChanged(ctx, deploymentID, lifecycleInstanceDeleted, ref.shape, ref.instance)
			return nil
		},
	})

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

	client, err := a.lxd.Client()
	if err != nil {
		return response.SmartError(err)
	}

	var deploymentID int64
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		var shape *db.Shape
		deploymentID, shape, err = shapeInTx(ctx, tx, ref.shapeRef)
		if err != nil {
			return err
		}

		row, err := db.GetInstance(ctx, tx, shape.ID, ref.instance)
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

	op := a.ops.Start(operations.Args{
		Description:  fmt.Sprintf("Changing state of instance %s (%s)", ref.instance, req.Action),
		Project:      ref.project,
		DeploymentID: deploymentID,
		Resources:    a.resources(ref),
		Run: func(ctx context.Context, op *operations.Operation) error {
			err := backend.UpdateInstanceState(ctx, client, ref.project, ref.instance, req)
			if err == nil {
				a.lifecycle.emit(r, ref.project, deploymentID, lifecycleInstanceUpdated, api.DeploymentShapeInstanceURL(ref.project, ref.name, ref.shape, ref.instance))
				if req.Action == "stop" {
					a.lifecycle.instanceChanged(ctx, deploymentID, lifecycleInstanceStopped, ref.shape, ref.instance)
				}
			}

			return err
		},
	})

	return response.AsyncResponse(op.URL(), op.API())
}
