package rollout

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
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// rolloutView is a rollout with the state of its shape's instances.
type rolloutView struct {
	shape    *db.Shape
	rows     []db.Instance
	settings shapes.Rollout
	plan     shapes.RolloutPlan
	progress bool
}

// observe reads a rollout's shape and instances, and LXD's view of them (e.views).
func (e *Engine) observe(ctx context.Context, client *backend.Conn, r db.Rollout) (*rolloutView, error) {
	v := &rolloutView{}
	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		v.shape, err = ShapeByID(ctx, tx, r.DeploymentID, r.ShapeID)
		if err != nil {
			return err
		}

		v.rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: r.ShapeID})
		return err
	})
	if err != nil {
		return nil, err
	}

	// A listing only now and then; between listings, the instances whose record changed
	// since LXD was last asked (live_view.go).
	live, err := e.views.refresh(client, r, v.rows)
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

	state := rolloutState(r, v.shape, v.rows, live, v.settings, time.Now())
	for _, i := range state.Instances {
		// A new instance that became ready since the last progress is progress.
		if i.Ready && !rules.Outdated(i.Revision, state.Target) && i.RunningSince.Add(v.settings.MinReady).After(r.ProgressAt) {
			v.progress = true
		}
	}

	v.plan = shapes.PlanRollout(state)
	return v, nil
}

// step moves one running rollout forward.
func (e *Engine) step(ctx context.Context, client *backend.Conn, r db.Rollout) error {
	if UsesDeployer(r) {
		return e.stepCustom(ctx, client, r)
	}

	v, err := e.observe(ctx, client, r)
	if err != nil {
		return err
	}

	// A pre hook gates the rollout's first replacement (transient.go).
	ready, err := e.hookGate(ctx, client, r, v, db.KindPre)
	if !ready {
		return err
	}

	// What LXD can apply live goes in place first: same instances, no restart. A step that
	// updated some in place replaces nothing: the next step takes the next batch, and only
	// what cannot go in place (or was refused) is replaced once none is left.
	if v.plan.Outdated > 0 && e.inPlace(ctx, r, v) > 0 {
		v, err = e.observe(ctx, client, r)
		if err != nil {
			return err
		}

		v.progress = true
		v.plan.Launch, v.plan.Remove, v.plan.Refuse = 0, nil, ""
	}

	p := v.plan
	now := time.Now()
	switch {
	case p.Refuse != "":
		return e.fail(ctx, r, p.Refuse)
	case p.Complete:
		// A post hook gates the end.
		ready, err = e.hookGate(ctx, client, r, v, db.KindPost)
		if !ready {
			return err
		}

		return e.finish(ctx, r, api.RolloutComplete, "", reporter.RolloutCompleted)
	case p.WaitPromote:
		return e.Transition(ctx, r, api.RolloutRunning, api.RolloutPaused, "wait-promote", "the canaries are ready: promote to continue, or abort to revert them", reporter.RolloutPaused, Requestor)
	case !v.progress && now.Sub(r.ProgressAt) > v.settings.ProgressDeadline:
		return e.fail(ctx, r, fmt.Sprintf("no progress for %s (rollout.progress_deadline): %d of %d instances updated, %d ready", v.settings.ProgressDeadline, p.Updated, p.Updated+p.Outdated, p.Ready))
	}

	err = e.recordStep(ctx, r, v, now)
	if errors.Is(err, errNothingToRecord) {
		err = nil
	}

	if errors.Is(err, db.ErrRolloutChanged) || errors.Is(err, db.ErrRolloutClaimLost) {
		return nil // paused or cancelled meanwhile, or another member took it over
	}

	if err != nil {
		return err
	}

	ref := refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: r.Project, Name: r.Deployment}, Shape: r.Shape}
	if v.progress {
		e.reporter.RolloutEvent(Requestor, ref, r.DeploymentID, r.Number, reporter.RolloutStep)
	}

	e.act(ctx, r, v, ref)
	return nil
}

// recordStep records where the rollout is: the revision it follows, its phase, its
// progress (with an activity entry when it progressed).
func (e *Engine) recordStep(ctx context.Context, r db.Rollout, v *rolloutView, now time.Time) error {
	p := v.plan
	if !stepChanges(r, v) {
		// Most steps (one after every launch and delete) change nothing of the record; the
		// launches and deletes they ask for check the claim and the rollout's status in
		// their own transactions (stillRunning).
		return errNothingToRecord
	}

	return e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
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
			return fleet.RecordActivity(ctx, tx, r.DeploymentID, api.DeploymentActivity{Shape: r.Shape, Action: "rollout-step", Requestor: Requestor,
				Why: fmt.Sprintf("rollout %d: %d of %d instances at revision %d, %d ready", r.Number, p.Updated, p.Updated+p.Outdated, revision, p.Ready)})
		}

		return nil
	})
}

// errNothingToRecord says a step changed nothing of its rollout's record.
var errNothingToRecord = errors.New("nothing to record")

// stepChanges says whether a step has something to record: progress, a new target
// revision or a new phase.
func stepChanges(r db.Rollout, v *rolloutView) bool {
	return v.progress || v.shape.Revision != r.Revision || v.plan.Phase != r.Phase
}

// act asks the fleet for the step's deletes and launches.
func (e *Engine) act(ctx context.Context, r db.Rollout, v *rolloutView, ref refs.ShapeRef) {
	p := v.plan
	// Deletes go first: with max_unavailable they make the room the launches use.
	for _, name := range p.Remove {
		c := fleet.Change{By: Requestor, Why: fmt.Sprintf("rollout %d: replace outdated instance", r.Number), InTx: e.stillRunning(r, true), FromRollout: true}
		op, err := e.fleet.StartDelete(ctx, refs.InstanceRef{ShapeRef: ref, Instance: name}, c)
		if err != nil {
			e.logger.Info("rollout: delete refused", "instance", name, "err", err)
			continue
		}

		e.pokeWhenDone(op)
	}

	for i := 0; i < p.Launch; i++ {
		name := ReplacementName(r.Shape, v.shape.Revision)
		c := fleet.Change{By: Requestor, Why: fmt.Sprintf("rollout %d: launch at revision %d", r.Number, v.shape.Revision), FromRollout: true, InTx: e.stillRunning(r, false)}
		op, err := e.fleet.StartLaunch(ctx, refs.InstanceRef{ShapeRef: ref, Instance: name}, c)
		if err != nil {
			e.logger.Info("rollout: launch refused", "instance", name, "err", err)
			break
		}

		e.pokeWhenDone(op)
	}

}

// Poke makes the engine tick now rather than at its next interval.
func (e *Engine) Poke() {
	e.wake.Poke()
}

// WatchImages has the image-change trigger look at the shapes' aliases now.
func (e *Engine) WatchImages() {
	e.images.poke()
}

// pokeWhenDone ticks again as soon as a launch or delete succeeds, rather than at the next
// tick: a rollout moves at LXD's pace. A failure waits for the tick, so that a template
// that cannot start is retried once a tick, not in a tight loop.
func (e *Engine) pokeWhenDone(op *operations.Operation) {
	go func() {
		<-op.Done()
		if op.API().StatusCode == lxdapi.Success {
			e.Poke()
		}
	}()
}

// stillRunning checks, in the reservation's transaction, that this daemon still holds the
// rollout's claim and that the rollout is still running (a pause or cancel that came
// meanwhile stops the step), and with progress marks it as progressing, so that a crash
// cannot lose the step.
func (e *Engine) stillRunning(r db.Rollout, progress bool) func(ctx context.Context, tx *sql.Tx, shape *db.Shape, row int64) error {
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
