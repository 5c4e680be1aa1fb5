package fleet

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// pendingDelete is an instance marked as going, waiting for LXD to delete it.
type pendingDelete struct {
	ref          refs.InstanceRef
	deploymentID int64
	row          db.Instance
	client       *backend.Conn
	by           api.DeploymentRequestor
	started      time.Time

	// reuse, when set, returns the instance to the shape's warm pool instead of deleting it.
	reuse *PoolReturn

	// drainUntil, when set, is until when the instance may finish its connections before
	// LXD deletes it (traffic_drain.go).
	drainUntil *time.Time
}

// StartDelete marks an instance as going and deletes it as a background operation (after
// its drain, when the shape has a terminate hook).
func (f *Fleet) StartDelete(ctx context.Context, ref refs.InstanceRef, c Change) (*operations.Operation, error) {
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

// reserveDelete checks the bounds and marks the instance as deleting in one transaction;
// from then on it no longer counts.
func (f *Fleet) reserveDelete(ctx context.Context, ref refs.InstanceRef, c Change) (p *pendingDelete, err error) {
	var outcome reservation
	defer func() { f.deleteReserved(ref, outcome, err) }()
	client, err := f.lxd.Conn()
	if err != nil {
		return nil, err
	}

	p = &pendingDelete{ref: ref, client: client, by: c.By, started: time.Now()}
	err = f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		outcome = reservation{}
		return f.recordDelete(ctx, tx, p, c, &outcome)
	})
	if err != nil {
		return nil, err
	}

	f.inflight.Add(ref.Project, ref.Instance)
	return p, nil
}

// recordDelete is the delete reservation's transaction: the bound check, the record moved
// to deleting and the activity entry (outcome says how far it got).
func (f *Fleet) recordDelete(ctx context.Context, tx *sql.Tx, p *pendingDelete, c Change, outcome *reservation) error {
	deploymentID, shape, err := refs.ShapeInTx(ctx, tx, p.ref.ShapeRef)
	if err != nil {
		return err
	}

	p.deploymentID = deploymentID
	outcome.shapeFound = true
	row, err := db.GetInstance(ctx, tx, shape.ID, p.ref.Instance)
	if err != nil {
		return err
	}

	err = deletable(*row, c)
	if err != nil {
		return err
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
	p.reuse = Reusable(shape, row)
	p.drainUntil, err = markDrain(ctx, tx, shape, *row, time.Now())
	if err != nil {
		return err
	}

	err = db.SetInstanceState(ctx, tx, row.ID, row.State, db.InstanceDeleting, f.owner, time.Now())
	if err != nil {
		return err
	}

	// A missing instance left the count when LXD lost it, a replaced one when its
	// replacement was reserved (logged then as a replace).
	if shapes.Counted(*row) {
		err = ScaleActivity(ctx, tx, p.deploymentID, shape, p.ref.Instance, -1, c)
		if err != nil {
			return err
		}
	}

	if c.InTx != nil {
		return c.InTx(ctx, tx, shape, row.ID)
	}

	return nil
}

// deletable refuses a delete of an instance whose launch or delete is under way, or that
// waits in terminating:wait (unless the delete ends that wait).
func deletable(row db.Instance, c Change) error {
	switch {
	case row.State == db.InstanceCreating:
		return lxdapi.StatusErrorf(http.StatusConflict, "instance %s is still being created: wait for its operation to finish", row.Name)
	case row.State == db.InstanceDeleting:
		return lxdapi.StatusErrorf(http.StatusConflict, "instance %s is already being deleted", row.Name)
	case row.Hook.Hook == api.LifecycleTerminatingWait && !c.drained:
		return lxdapi.StatusErrorf(http.StatusConflict, "instance %s waits in terminating:wait: end the wait with POST .../instances/%s/lifecycle {\"action\": \"continue\"}", row.Name, row.Name)
	}

	return nil
}

// finishDelete drains the instance (when its shape has traffic), deletes it in LXD and
// then its record. If LXD refuses, the instance is still there and counts again.
func (f *Fleet) finishDelete(ctx context.Context, p *pendingDelete) (err error) {
	ref, row := p.ref, p.row
	defer f.inflight.Remove(ref.Project, ref.Instance)
	defer func() { f.deleteFinished(p, err) }()
	// A drain cut short by a stop leaves the record deleting, for reconcile to finish.
	err = f.waitDrain(ctx, p)
	if err != nil {
		return err
	}

	callStart := time.Now()
	err = f.remove(ctx, p)
	f.metrics.LXDCall("delete", time.Since(callStart), err)
	if err != nil {
		_ = f.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
			err := db.SetInstanceState(ctx, tx, row.ID, db.InstanceDeleting, row.State, f.owner, time.Now())
			if err != nil || p.drainUntil == nil {
				return err
			}

			// The instance stays: it serves again.
			return db.SetInstanceDrain(ctx, tx, row.ID, nil)
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

	f.reporter.Send(p.by, p.deploymentID, reporter.InstanceDeleted.Event(ref, nil))
	instanceChanged(ctx, f.reporter, p.deploymentID, reporter.InstanceDeleted, ref.Shape, ref.Instance)
	return nil
}
