package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// instanceFleet makes and removes the instances of shapes: the one place where the bound check, the
// instance record and LXD meet. The governor API, rollouts and autohealing all go through
// it, so the bounds hold whoever asks. Each change is two steps: a reservation (one
// transaction: the bound check, the record, the activity entry) and the LXD work.
type instanceFleet struct {
	db        *db.Cluster
	lxd       *backend.LXD
	ops       *operations.Manager
	inflight  *fleet.Inflight
	sockets   governorSockets
	lifecycle lifecycle

	// pool hands out warm pool instances to launches (nil: no warm pools).
	pool *warmPool

	// stopping closes when the daemon stops: operations that only wait (drains) end then.
	stopping <-chan struct{}

	// owner names this daemon on the instance records it changes.
	owner string
}

// change says who asks for an instance change and why, for the activity log and events.
type change struct {
	by  api.DeploymentRequestor
	why string

	// inTx, when set, runs inside the reservation's transaction after the bound check:
	// rollouts record their progress there, so a crash cannot count a step twice.
	inTx func(ctx context.Context, tx *sql.Tx, shape *db.Shape, row int64) error

	// fromRollout marks a rollout's own launches: any other launch or delete moves the size
	// a running rollout keeps (scaleActivity).
	fromRollout bool

	// before, when set, runs inside a launch's reservation before the bound check: a
	// replacement takes the instance it replaces out of the count there (autoheal.go).
	before func(ctx context.Context, tx *sql.Tx, shape *db.Shape) error

	// drained says a delete ends an instance's terminating:wait (hooks.go): its bound
	// check was made when the wait began.
	drained bool

	// replaces names the instance a launch replaces (autohealing): not a scale change, so
	// the activity log says "replace" and a running rollout's size stays.
	replaces string
}

// pendingLaunch is a reserved instance waiting for LXD to make it.
type pendingLaunch struct {
	ref          refs.InstanceRef
	deploymentID int64
	row          int64
	socket       bool
	req          lxdapi.InstancesPost
	client       lxd.InstanceServer
	by           api.DeploymentRequestor
	started      time.Time

	// sized says the reservation moved a running rollout's size, to undo if it is dropped.
	sized bool

	shapeID      int64
	templateHash string
	poolHash     string // the warm pool instances this launch may take (warmpool.go)
	launchHook   *time.Duration
}

// reserveLaunch checks the bounds and records the new instance in one transaction.
func (f *instanceFleet) reserveLaunch(ctx context.Context, ref refs.InstanceRef, c change) (p *pendingLaunch, err error) {
	var outcome reservation
	defer func() { f.launchReserved(ref, outcome, err) }()
	client, err := f.lxd.Client()
	if err != nil {
		return nil, err
	}

	p = &pendingLaunch{ref: ref, client: client, by: c.by, started: time.Now(), sized: !c.fromRollout && c.replaces == ""}
	var shape *db.Shape
	err = f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		outcome = reservation{}
		p.deploymentID, shape, err = refs.ShapeInTx(ctx, tx, ref.ShapeRef)
		if err != nil {
			return err
		}

		outcome.shapeFound = true
		if c.before != nil {
			err = c.before(ctx, tx, shape)
			if err != nil {
				return err
			}
		}

		err = shapes.CheckGrow(shape)
		if err != nil {
			outcome.atBound = true
			return err
		}

		p.shapeID, p.templateHash, p.poolHash = shape.ID, backend.TemplateHash(shape.InstanceTemplate), fleet.PoolHash(shape)
		p.launchHook = hookTimeout(shape.Hooks, false)
		p.row, err = db.CreateInstance(ctx, tx, ref.Project, shape.ID, ref.Instance, p.templateHash, shape.Revision, f.owner, time.Now())
		if err != nil {
			return err
		}

		err = scaleActivity(ctx, tx, p.deploymentID, shape, ref.Instance, +1, c)
		if err != nil {
			return err
		}

		// Reconcile reads this when a crash leaves the launch unfinished (launchDropped).
		if !p.sized {
			err = db.SetInstanceKeepsRolloutSize(ctx, tx, p.row)
			if err != nil {
				return err
			}
		}

		if shape.Config[configGovernorSocket] == "true" {
			err = db.SetInstanceGovernorSocket(ctx, tx, p.row)
			if err != nil {
				return err
			}
		}

		if c.inTx != nil {
			return c.inTx(ctx, tx, shape, p.row)
		}

		return nil
	})
	if err != nil {
		return nil, err
	}

	p.req = backend.InstanceRequest(shape.InstanceTemplate, ref.Instance, ref.Name, ref.Shape)
	p.socket = shape.Config[configGovernorSocket] == "true"
	if p.socket {
		hostPath, err := f.sockets.AddInstance(ref.Project, ref.Instance)
		if err != nil {
			f.dropReservation(ctx, p)
			return nil, err
		}

		withGovernorSocket(&p.req, hostPath)
	}

	f.inflight.Add(ref.Project, ref.Instance)
	return p, nil
}

func (f *instanceFleet) dropReservation(ctx context.Context, p *pendingLaunch) {
	_ = f.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		err := db.DeleteInstance(ctx, tx, p.row, db.InstanceCreating)
		if err != nil {
			return err
		}

		return launchDropped(ctx, tx, p)
	})
}

// abandonLaunch gives up a reserved launch before LXD was asked to make anything (an
// autohealing replacement whose old instance could not be deleted first): its record goes,
// as that of a failed create does.
func (f *instanceFleet) abandonLaunch(ctx context.Context, p *pendingLaunch, cause error) {
	defer f.inflight.Remove(p.ref.Project, p.ref.Instance)
	f.launchFinished(p, cause)
	if p.socket {
		f.sockets.RemoveInstance(p.ref.Project, p.ref.Instance)
	}

	f.dropReservation(ctx, p)
}

// finishLaunch makes the reserved instance in LXD and settles its record: created on
// success, removed when LXD has nothing left of it, kept as creating for reconcile when a
// failed create could not be cleaned up.
func (f *instanceFleet) finishLaunch(ctx context.Context, p *pendingLaunch) (err error) {
	ref := p.ref
	defer f.inflight.Remove(ref.Project, ref.Instance)
	defer func() { f.launchFinished(p, err) }()
	callStart := time.Now()
	err = f.create(ctx, p)
	f.lifecycle.metrics.LXDCall("create", time.Since(callStart), err)
	var leftBehind *backend.LeftBehindError
	if errors.As(err, &leftBehind) {
		return f.launchLeftBehind(ctx, p, err)
	}

	if err != nil {
		if p.socket {
			f.sockets.RemoveInstance(ref.Project, ref.Instance)
		}

		f.dropReservation(ctx, p)
		return err
	}

	err = f.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		err := db.SetInstanceState(ctx, tx, p.row, db.InstanceCreating, db.InstanceCreated, f.owner, time.Now())
		if err != nil || p.launchHook == nil {
			return err
		}

		return startLaunchWait(ctx, tx, p.row, *p.launchHook)
	})
	if errors.Is(err, db.ErrInstanceChanged) {
		// The record went away meanwhile (a forced delete): the instance is ours and
		// unrecorded, so it goes too rather than run uncounted.
		_ = backend.DeleteInstance(context.WithoutCancel(ctx), p.client, ref.Project, ref.Instance)
		return fmt.Errorf("the record of instance %s was removed while it was being created: the instance was deleted again", ref.Instance)
	}

	if err != nil {
		return fmt.Errorf("instance created, but recording it failed (reconcile will adopt it): %w", err)
	}

	f.lifecycle.emit(p.by, ref.Project, p.deploymentID, lifecycleInstanceCreated, api.DeploymentShapeInstanceURL(ref.Project, ref.Name, ref.Shape, ref.Instance))
	f.lifecycle.instanceChanged(ctx, p.deploymentID, lifecycleInstanceCreated, ref.Shape, ref.Instance)
	if p.launchHook != nil {
		f.lifecycle.waiting(ctx, p.by, ref, p.deploymentID, api.LifecycleLaunchingWait, time.Now().Add(*p.launchHook))
	}

	return nil
}

// launchLeftBehind settles a launch that failed and whose cleanup could not remove what LXD
// made (LXD kept the instance busy past the cleanup's retries): a broken launch must never
// count as capacity, so its record moves to deleting, which no longer counts toward the
// size but still against the maximum while LXD holds the instance, and reconcile deletes
// it at its next round. The caller hears what was left and what happens to it.
func (f *instanceFleet) launchLeftBehind(ctx context.Context, p *pendingLaunch, err error) error {
	txErr := f.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		err := db.SetInstanceState(ctx, tx, p.row, db.InstanceCreating, db.InstanceDeleting, f.owner, time.Now())
		if err != nil {
			return err
		}

		return launchDropped(ctx, tx, p)
	})
	if txErr != nil {
		return fmt.Errorf("%w; instance %s is left in LXD and its record stays creating: reconcile deletes it at its next round (every minute by default)", err, p.ref.Instance)
	}

	return fmt.Errorf("%w; instance %s is left in LXD, no longer counts toward the shape, and reconcile deletes it at its next round (every minute by default)", err, p.ref.Instance)
}

// startLaunch reserves an instance and makes it in LXD as a background operation.
// Launches cannot be cancelled half way: that left unrecorded instances behind.
func (f *instanceFleet) startLaunch(ctx context.Context, ref refs.InstanceRef, c change) (*operations.Operation, error) {
	p, err := f.reserveLaunch(ctx, ref, c)
	if err != nil {
		return nil, err
	}

	return f.instanceOperation(ctx, ref, p.deploymentID, "Creating", func(ctx context.Context) error {
		return f.finishLaunch(ctx, p)
	}), nil
}

// pendingDelete is an instance marked as going, waiting for LXD to delete it.
type pendingDelete struct {
	ref          refs.InstanceRef
	deploymentID int64
	row          db.Instance
	client       lxd.InstanceServer
	by           api.DeploymentRequestor
	started      time.Time

	// reuse, when set, returns the instance to the shape's warm pool instead of deleting it.
	reuse *fleet.PoolReturn
}

// reserveDelete checks the bounds and marks the instance as deleting in one transaction;
// from then on it no longer counts.
func (f *instanceFleet) reserveDelete(ctx context.Context, ref refs.InstanceRef, c change) (p *pendingDelete, err error) {
	var outcome reservation
	defer func() { f.deleteReserved(ref, outcome, err) }()
	client, err := f.lxd.Client()
	if err != nil {
		return nil, err
	}

	p = &pendingDelete{ref: ref, client: client, by: c.by, started: time.Now()}
	err = f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		outcome = reservation{}
		var shape *db.Shape
		p.deploymentID, shape, err = refs.ShapeInTx(ctx, tx, ref.ShapeRef)
		if err != nil {
			return err
		}

		outcome.shapeFound = true

		row, err := db.GetInstance(ctx, tx, shape.ID, ref.Instance)
		if err != nil {
			return err
		}

		switch {
		case row.State == db.InstanceCreating:
			return lxdapi.StatusErrorf(http.StatusConflict, "instance %s is still being created: wait for its operation to finish", row.Name)
		case row.State == db.InstanceDeleting:
			return lxdapi.StatusErrorf(http.StatusConflict, "instance %s is already being deleted", row.Name)
		case row.Hook.Hook == api.LifecycleTerminatingWait && !c.drained:
			return lxdapi.StatusErrorf(http.StatusConflict, "instance %s waits in terminating:wait: end the wait with POST .../instances/%s/lifecycle {\"action\": \"continue\"}", row.Name, row.Name)
		}

		// A missing instance, or one being replaced, no longer counts, so removing its
		// record changes no size; a drained one was checked when its wait began.
		if shapes.Counted(*row) && !c.drained {
			err = shapes.CheckShrink(shape)
			if err != nil {
				outcome.atBound = true
				return err
			}
		}

		p.row = *row
		p.reuse = fleet.Reusable(shape, row)
		err = db.SetInstanceState(ctx, tx, row.ID, row.State, db.InstanceDeleting, f.owner, time.Now())
		if err != nil {
			return err
		}

		// A missing instance left the count when LXD lost it, a replaced one when its
		// replacement was reserved (logged then as a replace).
		if shapes.Counted(*row) {
			err = scaleActivity(ctx, tx, p.deploymentID, shape, ref.Instance, -1, c)
			if err != nil {
				return err
			}
		}

		if c.inTx != nil {
			return c.inTx(ctx, tx, shape, row.ID)
		}

		return nil
	})
	if err != nil {
		return nil, err
	}

	f.inflight.Add(ref.Project, ref.Instance)
	return p, nil
}

// finishDelete deletes the instance in LXD and then its record. If LXD refuses, the
// instance is still there and counts again.
func (f *instanceFleet) finishDelete(ctx context.Context, p *pendingDelete) (err error) {
	ref, row := p.ref, p.row
	defer f.inflight.Remove(ref.Project, ref.Instance)
	defer func() { f.deleteFinished(p, err) }()
	callStart := time.Now()
	err = f.remove(ctx, p)
	f.lifecycle.metrics.LXDCall("delete", time.Since(callStart), err)
	if err != nil {
		_ = f.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
			return db.SetInstanceState(ctx, tx, row.ID, db.InstanceDeleting, row.State, f.owner, time.Now())
		})

		return err
	}

	f.sockets.RemoveInstance(row.Project, row.Name)
	err = f.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteInstance(ctx, tx, row.ID, db.InstanceDeleting)
	})
	if err != nil && !errors.Is(err, db.ErrInstanceChanged) {
		return err
	}

	f.lifecycle.emit(p.by, ref.Project, p.deploymentID, lifecycleInstanceDeleted, api.DeploymentShapeInstanceURL(ref.Project, ref.Name, ref.Shape, ref.Instance))
	f.lifecycle.instanceChanged(ctx, p.deploymentID, lifecycleInstanceDeleted, ref.Shape, ref.Instance)
	return nil
}

// startDelete marks an instance as going and deletes it as a background operation.
func (f *instanceFleet) startDelete(ctx context.Context, ref refs.InstanceRef, c change) (*operations.Operation, error) {
	op, draining, err := f.startDrain(ctx, ref, c)
	if draining || err != nil {
		return op, err
	}

	p, err := f.reserveDelete(ctx, ref, c)
	if err != nil {
		return nil, err
	}

	return f.instanceOperation(ctx, ref, p.deploymentID, "Deleting", func(ctx context.Context) error {
		return f.finishDelete(ctx, p)
	}), nil
}

// instanceOperation runs the LXD half of a reserved launch or delete (finish) as a
// background operation. It cannot be cancelled half way: that left unrecorded instances
// behind, or records of instances LXD no longer has.
func (f *instanceFleet) instanceOperation(ctx context.Context, ref refs.InstanceRef, deploymentID int64, verb string, finish func(ctx context.Context) error) *operations.Operation {
	return f.ops.Start(operations.Args{
		Description:   fmt.Sprintf("%s instance %s of shape %s", verb, ref.Instance, ref.Shape),
		Project:       ref.Project,
		DeploymentID:  deploymentID,
		Resources:     instanceResources(ref),
		Uncancellable: true,
		Logger:        requestLoggerIfAny(ctx),
		Run: func(ctx context.Context, op *operations.Operation) error {
			return finish(ctx)
		},
	})
}

// instanceResources lists what an instance operation touches, as LXD does.
func instanceResources(ref refs.InstanceRef) map[string][]string {
	return map[string][]string{
		"instances":         {api.InstanceURL(ref.Project, ref.Instance)},
		"deployment_shapes": {api.DeploymentShapeURL(ref.Project, ref.Name, ref.Shape)},
	}
}
