package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Rollouts replace a shape's outdated instances with instances of its latest revision
// (seed 002's strategies). The engine is a loop of ticks: each reads the rollout row and the
// shape's instance rows, plans one step (shapes.PlanRollout) and asks the fleet for the
// launches and deletes, which keep their bound check. Nothing lives only in memory, so a
// daemon killed mid-rollout resumes where the rows say it is, without launching twice.
//
// Replacement instances are named <shape>-r<revision>-<6 random hex digits> (cut to LXD's
// 63 characters), so that `lxc list` shows which revision each came from and names never
// collide with the governor's.

// Lifecycle actions of rollouts, on /1.0/events and the governor's webhook.
const (
	lifecycleRolloutStarted   = "deployment-shape-rollout-started"
	lifecycleRolloutStep      = "deployment-shape-rollout-step"
	lifecycleRolloutPaused    = "deployment-shape-rollout-paused"
	lifecycleRolloutResumed   = "deployment-shape-rollout-resumed"
	lifecycleRolloutPromoted  = "deployment-shape-rollout-promoted"
	lifecycleRolloutCompleted = "deployment-shape-rollout-completed"
	lifecycleRolloutFailed    = "deployment-shape-rollout-failed"
	lifecycleRolloutCancelled = "deployment-shape-rollout-cancelled"
	lifecycleRolloutReverted  = "deployment-shape-rollout-reverted"
)

// rolloutRequestor is who the engine's launches and deletes are by.
var rolloutRequestor = fleet.InternalRequestor("rollout")

// rolloutClaim decides which daemon of a cluster works on a rollout: a
// claimed_by/claimed_until pair on the rollout row, taken or renewed in each tick's
// transaction, and checked (fencing) in the transaction of every write a step makes.
//
// Why not a lease of the lease package (rollout/<id>): the claim lives and dies with the
// rollout row (nothing to release or clean up when it ends), one transaction claims every
// active rollout per tick instead of one lease transaction per rollout, and a rollout's
// steps on one daemon run on the engine's one goroutine, so the holder's name and an
// unexpired claim fence as well as a lease's token would.
type rolloutClaim interface {
	claim(ctx context.Context, tx *sql.Tx, r db.Rollout, now time.Time) (bool, error)

	// check fails with db.ErrRolloutClaimLost unless this daemon still holds r's claim
	// (and extends it): call it in the transaction of each write made for the rollout.
	check(ctx context.Context, tx *sql.Tx, r db.Rollout, now time.Time) error
}

// columnClaim claims rollouts through their claimed_by/claimed_until columns.
type columnClaim struct {
	owner string
	ttl   time.Duration
}

func (c columnClaim) claim(ctx context.Context, tx *sql.Tx, r db.Rollout, now time.Time) (bool, error) {
	return db.ClaimRollout(ctx, tx, r.ID, c.owner, now.Add(c.ttl), now)
}

func (c columnClaim) check(ctx context.Context, tx *sql.Tx, r db.Rollout, now time.Time) error {
	return db.HoldRolloutClaim(ctx, tx, r.ID, c.owner, now.Add(c.ttl), now)
}

// replacementName names an instance a rollout launches: <shape>-r<revision>-<6 hex>, so
// the name says which revision it runs (autohealing names its own after the instance it
// replaces: healedName).
func replacementName(shape string, revision int) string {
	suffix := make([]byte, 3)
	_, _ = rand.Read(suffix)
	tail := fmt.Sprintf("-r%d-%s", revision, hex.EncodeToString(suffix))
	if len(shape)+len(tail) > 63 {
		shape = shape[:63-len(tail)]
	}

	return shape + tail
}

// rolloutEngine runs the rollouts this daemon holds the claim of.
type rolloutEngine struct {
	db        *db.Cluster
	lxd       *backend.LXD
	fleet     *fleet.Fleet
	lifecycle lifecycle
	logger    *slog.Logger
	claim     rolloutClaim
	images    *imageWatcher

	// wake ticks the engine, and at once when poked (a rollout started, paused or resumed).
	wake loop.Loop
}

func newRolloutEngine(cluster *db.Cluster, l *backend.LXD, f *fleet.Fleet, lc lifecycle, logger *slog.Logger, owner string) *rolloutEngine {
	e := &rolloutEngine{db: cluster, lxd: l, fleet: f, lifecycle: lc, logger: logger, claim: columnClaim{owner: owner, ttl: 15 * time.Second}, wake: loop.New()}
	e.images = &imageWatcher{engine: e, wake: loop.New()}
	return e
}

// run ticks every interval, or when poked, until ctx ends.
func (e *rolloutEngine) run(ctx context.Context, interval time.Duration) {
	go e.images.run(ctx)
	e.wake.Run(ctx, interval, e.logger, "rollouts", func(ctx context.Context) error {
		e.tick(ctx)
		return nil
	})
}

// tick claims the active rollouts it can and moves each running one a step.
func (e *rolloutEngine) tick(ctx context.Context) {
	client, err := e.lxd.Client()
	if err != nil {
		return
	}

	var mine []db.Rollout
	now := time.Now()
	err = e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		mine = nil
		active, err := db.GetRollouts(ctx, tx, db.RolloutFilter{Active: true})
		if err != nil {
			return err
		}

		for _, r := range active {
			ok, err := e.claim.claim(ctx, tx, r, now)
			if err != nil {
				return err
			}

			if ok && r.Status == api.RolloutRunning {
				mine = append(mine, r)
			}
		}

		return nil
	})
	if err != nil {
		if ctx.Err() == nil {
			e.logger.Warn("rollouts: claim", "err", err)
		}

		return
	}

	for _, r := range mine {
		err = e.step(ctx, client, r)
		if err != nil && ctx.Err() == nil {
			e.logger.Warn("rollout step failed", "deployment", r.Deployment, "shape", r.Shape, "rollout", r.Number, "err", err)
		}
	}
}

// rolloutView is a rollout with the state of its shape's instances.
type rolloutView struct {
	shape    *db.Shape
	rows     []db.Instance
	settings shapes.Rollout
	plan     shapes.RolloutPlan
	progress bool
}

// observe reads a rollout's shape and instances, and LXD's view of them (one listing).
func (e *rolloutEngine) observe(ctx context.Context, client lxd.InstanceServer, r db.Rollout) (*rolloutView, error) {
	v := &rolloutView{}
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		v.shape, err = shapeByID(ctx, tx, r.DeploymentID, r.ShapeID)
		if err != nil {
			return err
		}

		v.rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: r.ShapeID})
		return err
	})
	if err != nil {
		return nil, err
	}

	live, err := backend.ListInstances(client, r.Project)
	if err != nil {
		return nil, err
	}

	// The strategy is the one recorded when the rollout started: a settings change made
	// during it (a new strategy, surge or canary count) is for the next rollout, so the
	// rollout never takes phases its record does not name (promote and abort check it).
	v.settings, err = shapes.ResolveRollout(r.Strategy, r.Size)
	if err != nil {
		return nil, err
	}

	now := time.Now()
	state := shapes.RolloutState{Settings: v.settings, Size: r.Size, Minimum: v.shape.ScalingMinimum, Maximum: v.shape.ScalingMaximum, Target: v.shape.Revision, Promoted: r.Promoted}
	for _, row := range v.rows {
		if shapes.Going(row) {
			state.Deleting++
		}

		if !shapes.Counted(row) {
			continue
		}

		var instance *lxdapi.Instance
		l, ok := live[row.Name]
		if ok {
			instance = &l
		}

		ready := shapes.ReadyFor(v.shape.Health, row, instance, v.settings.MinReady, now)
		state.Instances = append(state.Instances, shapes.RolloutInstance{Name: row.Name, Revision: row.Revision, Creating: row.State == db.InstanceCreating, Ready: ready})

		// A new instance that became ready since the last progress is progress.
		if ready && !shapes.Outdated(row, v.shape.Revision) && shapes.RunningSince(row, instance).Add(v.settings.MinReady).After(r.ProgressAt) {
			v.progress = true
		}
	}

	v.plan = shapes.PlanRollout(state)
	return v, nil
}

// step moves one running rollout forward.
func (e *rolloutEngine) step(ctx context.Context, client lxd.InstanceServer, r db.Rollout) error {
	v, err := e.observe(ctx, client, r)
	if err != nil {
		return err
	}

	p := v.plan
	now := time.Now()
	switch {
	case p.Refuse != "":
		return e.fail(ctx, r, p.Refuse)
	case p.Complete:
		return e.finish(ctx, r, api.RolloutComplete, "", lifecycleRolloutCompleted)
	case p.WaitPromote:
		return e.transition(ctx, r, api.RolloutRunning, api.RolloutPaused, "wait-promote", "the canaries are ready: promote to continue, or abort to revert them", lifecycleRolloutPaused, rolloutRequestor)
	case !v.progress && now.Sub(r.ProgressAt) > v.settings.ProgressDeadline:
		return e.fail(ctx, r, fmt.Sprintf("no progress for %s (rollout.progress_deadline): %d of %d instances updated, %d ready", v.settings.ProgressDeadline, p.Updated, p.Updated+p.Outdated, p.Ready))
	}

	// Record where the rollout is: the revision it follows, its phase, its progress.
	err = e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := e.claim.check(ctx, tx, r, time.Now())
		if err != nil {
			return err
		}

		revision, phase := v.shape.Revision, p.Phase
		err = db.UpdateRollout(ctx, tx, r.ID, api.RolloutRunning, db.RolloutUpdate{Revision: &revision, Phase: &phase, Progress: v.progress || revision != r.Revision}, now)
		if err != nil {
			return err
		}

		if v.progress {
			return fleet.RecordActivity(ctx, tx, r.DeploymentID, api.DeploymentActivity{Shape: r.Shape, Action: "rollout-step", Requestor: rolloutRequestor,
				Why: fmt.Sprintf("rollout %d: %d of %d instances at revision %d, %d ready", r.Number, p.Updated, p.Updated+p.Outdated, revision, p.Ready)})
		}

		return nil
	})
	if errors.Is(err, db.ErrRolloutChanged) || errors.Is(err, db.ErrRolloutClaimLost) {
		return nil // paused or cancelled meanwhile, or another member took it over
	}

	if err != nil {
		return err
	}

	ref := refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: r.Project, Name: r.Deployment}, Shape: r.Shape}
	if v.progress {
		e.lifecycle.rolloutEvent(rolloutRequestor, ref, r.DeploymentID, r.Number, lifecycleRolloutStep)
	}

	// Deletes go first: with max_unavailable they make the room the launches use.
	for _, name := range p.Remove {
		c := fleet.Change{By: rolloutRequestor, Why: fmt.Sprintf("rollout %d: replace outdated instance", r.Number), InTx: e.stillRunning(r, true), FromRollout: true}
		op, err := e.fleet.StartDelete(ctx, refs.InstanceRef{ShapeRef: ref, Instance: name}, c)
		if err != nil {
			e.logger.Info("rollout: delete refused", "instance", name, "err", err)
			continue
		}

		e.pokeWhenDone(op)
	}

	for i := 0; i < p.Launch; i++ {
		name := replacementName(r.Shape, v.shape.Revision)
		c := fleet.Change{By: rolloutRequestor, Why: fmt.Sprintf("rollout %d: launch at revision %d", r.Number, v.shape.Revision), FromRollout: true, InTx: e.stillRunning(r, false)}
		op, err := e.fleet.StartLaunch(ctx, refs.InstanceRef{ShapeRef: ref, Instance: name}, c)
		if err != nil {
			e.logger.Info("rollout: launch refused", "instance", name, "err", err)
			break
		}

		e.pokeWhenDone(op)
	}

	return nil
}

// poke makes the engine tick now rather than at its next interval.
func (e *rolloutEngine) poke() {
	e.wake.Poke()
}

// pokeWhenDone ticks again as soon as a launch or delete succeeds, rather than at the next
// tick: a rollout moves at LXD's pace. A failure waits for the tick, so that a template
// that cannot start is retried once a tick, not in a tight loop.
func (e *rolloutEngine) pokeWhenDone(op *operations.Operation) {
	go func() {
		<-op.Done()
		if op.API().StatusCode == lxdapi.Success {
			e.poke()
		}
	}()
}

// stillRunning checks, in the reservation's transaction, that this daemon still holds the
// rollout's claim and that the rollout is still running (a pause or cancel that came
// meanwhile stops the step), and with progress marks it as progressing, so that a crash
// cannot lose the step.
func (e *rolloutEngine) stillRunning(r db.Rollout, progress bool) func(ctx context.Context, tx *sql.Tx, shape *db.Shape, row int64) error {
	return func(ctx context.Context, tx *sql.Tx, shape *db.Shape, row int64) error {
		err := e.claim.check(ctx, tx, r, time.Now())
		if err != nil {
			return err
		}

		err = db.UpdateRollout(ctx, tx, r.ID, api.RolloutRunning, db.RolloutUpdate{Progress: progress}, time.Now())
		if errors.Is(err, db.ErrRolloutChanged) {
			return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is no longer running", r.Number)
		}

		return err
	}
}

// fence checks the claim for the engine's own decisions (by rolloutRequestor), in their
// transaction; a user's pause, cancel or abort through the API applies whoever works on
// the rollout.
func (e *rolloutEngine) fence(ctx context.Context, tx *sql.Tx, r db.Rollout, by api.DeploymentRequestor) error {
	if by != rolloutRequestor {
		return nil
	}

	return e.claim.check(ctx, tx, r, time.Now())
}

// transition moves a rollout from one status to another, with its activity entry and
// events. A rollout no longer in from is left alone (409).
func (e *rolloutEngine) transition(ctx context.Context, r db.Rollout, from string, to string, phase string, reason string, action string, by api.DeploymentRequestor) error {
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := e.fence(ctx, tx, r, by)
		if err != nil {
			return err
		}

		err = db.UpdateRollout(ctx, tx, r.ID, from, db.RolloutUpdate{Status: &to, Phase: &phase, Reason: &reason, Progress: to == api.RolloutRunning}, time.Now())
		if errors.Is(err, db.ErrRolloutChanged) {
			return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is not %s (it changed meanwhile): read it again", r.Number, from)
		}

		if err != nil {
			return err
		}

		return fleet.RecordActivity(ctx, tx, r.DeploymentID, api.DeploymentActivity{Shape: r.Shape, Action: "rollout-" + to, Requestor: by, Why: fmt.Sprintf("rollout %d: %s", r.Number, reason)})
	})
	if err != nil {
		return err
	}

	e.lifecycle.rolloutEvent(by, refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: r.Project, Name: r.Deployment}, Shape: r.Shape}, r.DeploymentID, r.Number, action)
	e.poke()
	return nil
}

// finish ends a running rollout.
func (e *rolloutEngine) finish(ctx context.Context, r db.Rollout, status string, reason string, action string) error {
	return e.transition(ctx, r, api.RolloutRunning, status, "done", reason, action, rolloutRequestor)
}

// fail ends a rollout that cannot go on; with auto_revert (and unless it is itself a
// revert) the shape goes back to the last revision whose rollout completed, rolled out.
func (e *rolloutEngine) fail(ctx context.Context, r db.Rollout, reason string) error {
	var shape *db.Shape
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		shape, err = shapeByID(ctx, tx, r.DeploymentID, r.ShapeID)
		return err
	})
	if err != nil {
		return err
	}

	if !shape.Rollout.AutoRevert || r.Cause == causeAutoRevert || r.Cause == causeAbort {
		return e.transition(ctx, r, api.RolloutRunning, api.RolloutFailed, "done", reason, lifecycleRolloutFailed, rolloutRequestor)
	}

	return e.revert(ctx, r, api.RolloutRunning, causeAutoRevert, reason, rolloutRequestor)
}

// revert ends a rollout as reverted and rolls the shape back to the last revision whose
// rollout completed (the revision it started from when none did), in one transaction.
func (e *rolloutEngine) revert(ctx context.Context, r db.Rollout, from string, cause string, reason string, by api.DeploymentRequestor) error {
	var next int
	var target int
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		status, phase := api.RolloutReverted, "done"
		err := e.fence(ctx, tx, r, by)
		if err != nil {
			return err
		}

		target, err = db.GetLastCompleteRevision(ctx, tx, r.ShapeID)
		if err != nil {
			return err
		}

		if target == 0 {
			target = r.FromRevision
		}

		text := fmt.Sprintf("%s; reverted to revision %d", reason, target)
		err = db.UpdateRollout(ctx, tx, r.ID, from, db.RolloutUpdate{Status: &status, Phase: &phase, Reason: &text}, time.Now())
		if errors.Is(err, db.ErrRolloutChanged) {
			return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is not %s", r.Number, from)
		}

		if err != nil {
			return err
		}

		err = fleet.RecordActivity(ctx, tx, r.DeploymentID, api.DeploymentActivity{Shape: r.Shape, Action: "rollout-reverted", Requestor: by, Why: fmt.Sprintf("rollout %d: %s", r.Number, text)})
		if err != nil {
			return err
		}

		shape, err := shapeByID(ctx, tx, r.DeploymentID, r.ShapeID)
		if err != nil {
			return err
		}

		shape, _, err = rollbackShape(ctx, tx, shape, target, true, false, revisionArgs{cause: causeRollbackTo(target), by: by, notes: fmt.Sprintf("%s of rollout %d", cause, r.Number), always: true})
		if err != nil {
			return err
		}

		// The revert is a rolling rollout whatever the strategy: canaries are not
		// re-tested on the way back.
		next, err = createRollout(ctx, tx, shape, cause, by, fmt.Sprintf("revert of rollout %d", r.Number), true, false)
		return err
	})
	if err != nil {
		return err
	}

	ref := refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: r.Project, Name: r.Deployment}, Shape: r.Shape}
	e.lifecycle.rolloutEvent(by, ref, r.DeploymentID, r.Number, lifecycleRolloutReverted)
	e.lifecycle.rolloutEvent(by, ref, r.DeploymentID, next, lifecycleRolloutStarted)
	e.fleet.RefillPools() // the pool is of the abandoned revision
	e.poke()
	return nil
}

// createRollout starts a rollout of a shape's latest revision in the caller's transaction
// and returns its number. When one is already running: refuse says whether that is a 409
// (a user asked) or not (a trigger: the running rollout follows the latest revision).
func createRollout(ctx context.Context, tx *sql.Tx, shape *db.Shape, cause string, by api.DeploymentRequestor, notes string, promoted bool, refuse bool) (int, error) {
	active, err := db.GetActiveRollout(ctx, tx, shape.ID)
	if err != nil {
		return 0, err
	}

	if active != nil {
		if refuse {
			return 0, lxdapi.StatusErrorf(http.StatusConflict, "shape %s already has rollout %d (%s): wait for it, or cancel it first", shape.Name, active.Number, active.Status)
		}

		if promoted && !active.Promoted {
			err = db.UpdateRollout(ctx, tx, active.ID, active.Status, db.RolloutUpdate{Promoted: &promoted}, time.Now())
			if err != nil {
				return 0, err
			}
		}

		return active.Number, nil
	}

	rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
	if err != nil {
		return 0, err
	}

	// The rollout starts from the newest revision its instances run.
	from := 0
	for _, row := range rows {
		if shapes.Outdated(row, shape.Revision) && row.Revision > from {
			from = row.Revision
		}
	}

	if from == 0 {
		from = max(shape.Revision-1, 0)
	}

	number, err := db.CreateRollout(ctx, tx, shape.ID, api.DeploymentRollout{
		Status: api.RolloutRunning, Phase: "starting", Revision: shape.Revision, FromRevision: from,
		Strategy: shape.Rollout, Cause: cause, Requestor: by, Notes: notes, Size: shape.ScalingCurrent,
	}, time.Now())
	if err != nil {
		return 0, err
	}

	if promoted {
		r, err := db.GetRollout(ctx, tx, shape.ID, number)
		if err != nil {
			return 0, err
		}

		err = db.UpdateRollout(ctx, tx, r.ID, api.RolloutRunning, db.RolloutUpdate{Promoted: &promoted}, time.Now())
		if err != nil {
			return 0, err
		}
	}

	why := fmt.Sprintf("rollout %d of revision %d (%s)", number, shape.Revision, cause)
	if notes != "" {
		why += ": " + notes
	}

	return number, fleet.RecordActivity(ctx, tx, shape.DeploymentID, api.DeploymentActivity{Shape: shape.Name, Action: "rollout-started", From: from, To: shape.Revision, Requestor: by, Why: why})
}

// rolloutEvent tells /1.0/events and the governor's webhook about a rollout's step.
func (l lifecycle) rolloutEvent(by api.DeploymentRequestor, ref refs.ShapeRef, deploymentID int64, number int, action string) {
	l.countRollout(ref, action)
	l.emit(by, ref.Project, deploymentID, action, api.DeploymentShapeRolloutURL(ref.Project, ref.Name, ref.Shape, number))
	l.Notify(context.Background(), deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: action, Shape: ref.Shape})
}
