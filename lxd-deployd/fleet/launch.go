package fleet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
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
	"github.com/lxd-deployd/lxd-deployd/shared/revert"
)

// pendingLaunch is a reserved instance waiting for LXD to make it.
type pendingLaunch struct {
	ref          refs.InstanceRef
	deploymentID int64
	row          int64
	socket       bool
	req          lxdapi.InstancesPost
	client       *backend.Conn
	by           api.DeploymentRequestor
	started      time.Time

	// sized says the reservation moved a running rollout's size, to undo if it is dropped.
	sized bool

	shapeID      int64
	templateHash string
	poolHash     string // the warm pool instances this launch may take (warmpool.go)
	pooled       bool   // the shape has a warm pool: without one, no transaction looks
	launchHook   *time.Duration

	// target is LXD's ?target= for the create: the member (or @group) placement chose,
	// empty outside an LXD cluster or when LXD chooses (placement.go).
	target string

	// undo gives the reservation up (its governor socket, then its record), for a launch
	// that fails or is abandoned before LXD made anything.
	undo *revert.Reverter
}

// StartLaunch reserves an instance and makes it in LXD as a background operation.
// Launches cannot be cancelled half way: that left unrecorded instances behind.
func (f *Fleet) StartLaunch(ctx context.Context, ref refs.InstanceRef, c Change) (*operations.Operation, error) {
	p, err := f.reserveLaunch(ctx, ref, c)
	if err != nil {
		return nil, err
	}

	return f.instanceOperation(ctx, ref, p.deploymentID, "Creating", func(ctx context.Context) error {
		return f.finishLaunch(ctx, p)
	}), nil
}

// reserveLaunch checks the bounds and records the new instance in one transaction.
func (f *Fleet) reserveLaunch(ctx context.Context, ref refs.InstanceRef, c Change) (p *pendingLaunch, err error) {
	var outcome reservation
	defer func() { f.launchReserved(ref, outcome, err) }()
	client, err := f.lxd.Conn()
	if err != nil {
		return nil, err
	}

	p = &pendingLaunch{ref: ref, client: client, by: c.By, started: time.Now(), sized: !c.FromRollout && c.replaces == ""}
	var shape *db.Shape
	// Concurrent reservations share transactions: each sees the ones before it in the
	// same transaction, so the bound check holds across them.
	reserve := func() error {
		return f.writes.Do(ctx, func(ctx context.Context, tx *sql.Tx) error {
			outcome = reservation{}
			var err error
			shape, err = f.recordLaunch(ctx, tx, p, c, &outcome)
			return err
		})
	}

	err = reserve()
	if errors.Is(err, shapes.ErrUnknownTarget) {
		// The view of the LXD cluster may predate the group or member the placement
		// names (made a moment ago): it is read again before the launch is refused.
		_, refreshErr := f.lxd.RefreshCluster()
		if refreshErr == nil {
			err = reserve()
		}
	}

	if err != nil {
		return nil, err
	}

	undo := revert.New()
	defer undo.Fail()
	undo.Add(func() { f.dropReservation(ctx, p) })
	p.req = backend.InstanceRequest(shape.InstanceTemplate, ref.Instance, ref.Name, ref.Shape)
	p.socket = shape.Config[ConfigGovernorSocket] == "true"
	if p.socket {
		hostPath, err := f.sockets.AddInstance(ref.Project, ref.Instance)
		if err != nil {
			return nil, err
		}

		undo.Add(func() { f.sockets.RemoveInstance(ref.Project, ref.Instance) })
		withGovernorSocket(&p.req, hostPath)
	}

	f.inflight.Add(ref.Project, ref.Instance)
	p.undo = undo.Clone()
	undo.Success()
	return p, nil
}

// recordLaunch is the reservation's transaction: the bound check, the record and the
// activity entry (outcome says how far it got). A refusal before anything was written (no
// such shape, at its bound, a name in use) is the reservation's own (db.Refused): the
// other reservations sharing its transaction go on.
func (f *Fleet) recordLaunch(ctx context.Context, tx *sql.Tx, p *pendingLaunch, c Change, outcome *reservation) (*db.Shape, error) {
	refused := db.Refused
	if c.before != nil {
		refused = func(err error) error { return err } // before may have written
	}

	deploymentID, shape, err := refs.ShapeInTx(ctx, tx, p.ref.ShapeRef)
	if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return nil, db.Refused(err)
	}

	if err != nil {
		return nil, err
	}

	p.deploymentID = deploymentID
	outcome.shapeFound = true
	members := f.members()
	err = discountUnreachable(ctx, tx, shape, members)
	if err != nil {
		return nil, err
	}

	if c.before != nil {
		err = c.before(ctx, tx, shape)
		if err != nil {
			return nil, err
		}
	}

	err = shapes.CheckGrow(shape)
	if err != nil {
		outcome.atBound = true
		return nil, refused(err)
	}

	p.shapeID, p.templateHash, p.poolHash, p.pooled = shape.ID, backend.TemplateHash(shape.InstanceTemplate), PoolHash(shape), shape.WarmPool != nil
	p.launchHook = hookTimeout(shape.Hooks, false)
	p.row, err = db.CreateInstance(ctx, tx, p.ref.Project, shape.ID, p.ref.Instance, p.templateHash, shape.Revision, f.owner, time.Now())
	if lxdapi.StatusErrorCheck(err, http.StatusConflict) {
		return nil, refused(err) // the name is taken: checked before the insert
	}

	if err != nil {
		return nil, err
	}

	err = f.placeLaunch(ctx, tx, shape, p, c, members)
	if err != nil {
		return nil, err
	}

	err = ScaleActivity(ctx, tx, p.deploymentID, shape, p.ref.Instance, +1, c)
	if err != nil {
		return nil, err
	}

	// Reconcile reads this when a crash leaves the launch unfinished (launchDropped).
	if !p.sized {
		err = db.SetInstanceKeepsRolloutSize(ctx, tx, p.row)
		if err != nil {
			return nil, err
		}
	}

	if shape.Config[ConfigGovernorSocket] == "true" {
		err = db.SetInstanceGovernorSocket(ctx, tx, p.row)
		if err != nil {
			return nil, err
		}
	}

	if c.InTx != nil {
		return shape, c.InTx(ctx, tx, shape, p.row)
	}

	return shape, nil
}

func (f *Fleet) dropReservation(ctx context.Context, p *pendingLaunch) {
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
func (f *Fleet) abandonLaunch(ctx context.Context, p *pendingLaunch, cause error) {
	defer f.inflight.Remove(p.ref.Project, p.ref.Instance)
	f.launchFinished(p, cause)
	p.undo.Fail()
}

// finishLaunch makes the reserved instance in LXD and settles its record: created on
// success, removed when LXD has nothing left of it, kept as creating for reconcile when a
// failed create could not be cleaned up.
func (f *Fleet) finishLaunch(ctx context.Context, p *pendingLaunch) (err error) {
	ref := p.ref
	defer f.inflight.Remove(ref.Project, ref.Instance)
	defer func() { f.launchFinished(p, err) }()
	callStart := time.Now()
	err = f.create(ctx, p)
	f.metrics.LXDCall("create", time.Since(callStart), err)
	var leftBehind *backend.LeftBehindError
	if errors.As(err, &leftBehind) {
		return f.launchLeftBehind(ctx, p, err)
	}

	if err != nil {
		p.undo.Fail()
		return err
	}

	// Launches that end together share the transaction that records them created.
	err = f.writes.Do(context.WithoutCancel(ctx), f.recordCreated(p))
	if errors.Is(err, db.ErrInstanceChanged) {
		// The record went away meanwhile (a forced delete): the instance is ours and
		// unrecorded, so it goes too rather than run uncounted.
		_ = backend.DeleteInstance(context.WithoutCancel(ctx), p.client, ref.Project, ref.Instance)
		return fmt.Errorf("the record of instance %s was removed while it was being created: the instance was deleted again", ref.Instance)
	}

	if err != nil {
		return fmt.Errorf("instance created, but recording it failed (reconcile will adopt it): %w", err)
	}

	f.reporter.Send(p.by, p.deploymentID, reporter.InstanceCreated.Event(ref, nil))
	instanceChanged(ctx, f.reporter, p.deploymentID, reporter.InstanceCreated, ref.Shape, ref.Instance)
	if p.launchHook != nil {
		f.waiting(ctx, p.by, ref, p.deploymentID, api.LifecycleLaunchingWait, time.Now().Add(*p.launchHook))
	}

	return nil
}

// recordCreated is the write that records a launch LXD made: created, and waiting in its
// launch hook if the shape has one.
func (f *Fleet) recordCreated(p *pendingLaunch) db.GroupWrite {
	return func(ctx context.Context, tx *sql.Tx) error {
		err := db.SetInstanceState(ctx, tx, p.row, db.InstanceCreating, db.InstanceCreated, f.owner, time.Now())
		if errors.Is(err, db.ErrInstanceChanged) {
			return db.Refused(err) // the update matched no row: nothing written
		}

		if err != nil || p.launchHook == nil {
			return err
		}

		return startLaunchWait(ctx, tx, p.row, *p.launchHook)
	}
}

// launchLeftBehind settles a launch that failed and whose cleanup could not remove what LXD
// made (LXD kept the instance busy past the cleanup's retries): a broken launch must never
// count as capacity, so its record moves to deleting, which no longer counts toward the
// size but still against the maximum while LXD holds the instance, and reconcile deletes
// it at its next round. The caller hears what was left and what happens to it.
func (f *Fleet) launchLeftBehind(ctx context.Context, p *pendingLaunch, err error) error {
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
