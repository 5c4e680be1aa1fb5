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
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// What the rollouts API (.../shapes/{shape}/rollouts) asks of the engine: package main
// parses the request and answers; reading, checking and changing a rollout is here.

// badRequest wraps a validation error as a 400.
func badRequest(err error) error {
	if err == nil {
		return nil
	}

	return lxdapi.StatusErrorf(http.StatusBadRequest, "%v", err)
}

// Read reads rollout n of the shape ref names.
func Read(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef, n int) (*db.Rollout, error) {
	var rollout *db.Rollout
	err := refs.InShapeTx(ctx, cluster, ref, func(ctx context.Context, tx *sql.Tx, _ int64, shape *db.Shape) (err error) {
		rollout, err = db.GetRollout(ctx, tx, shape.ID, n)
		return err
	})

	return rollout, err
}

// View is a rollout as the API shows it, with its transient instances (WithTransients).
// counts adds its instance counts (WithCounts): a listing asks them of the active rollout
// only, as finished ones replaced what they replaced and reading LXD for each would cost a
// listing apiece.
func (e *Engine) View(ctx context.Context, r db.Rollout, counts bool) api.DeploymentRollout {
	out := r.DeploymentRollout
	if counts {
		out = e.WithCounts(ctx, r)
	}

	return WithTransients(ctx, e.db, r, out)
}

// WithCounts fills a rollout's instance counts as its steps count them (Counts), which the
// operation following a rollout reads every second; a rollout whose counts cannot be read
// is shown without them.
func (e *Engine) WithCounts(ctx context.Context, r db.Rollout) api.DeploymentRollout {
	out := r.DeploymentRollout
	client, err := e.lxd.Conn()
	if err != nil {
		client = nil // no LXD: the counts without readiness
	}

	updated, ready, outdated, err := e.Counts(ctx, client, r)
	if err == nil {
		out.Updated, out.Ready, out.Outdated = updated, ready, outdated
	}

	return out
}

// WithTransients adds a rollout's transient instances (a custom rollout's deployer, the
// pre and post hooks: instance, exit code and output) to the rollout shown; package main
// drops their output for callers who are not admins.
func WithTransients(ctx context.Context, cluster *db.Cluster, r db.Rollout, out api.DeploymentRollout) api.DeploymentRollout {
	if r.Strategy.Strategy != api.RolloutCustom && r.Strategy.Pre == nil && r.Strategy.Post == nil {
		return out
	}

	_ = cluster.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for kind, into := range map[string]**api.DeploymentRolloutDeployer{db.KindDeployer: &out.Deployer, db.KindPre: &out.Pre, db.KindPost: &out.Post} {
			d, err := db.GetDeployer(ctx, tx, r.ID, kind)
			if err != nil {
				return err
			}

			if d != nil {
				*into = &api.DeploymentRolloutDeployer{Instance: d.Instance, ExitCode: d.ExitCode, Output: d.Output, StartedAt: d.StartedAt, FinishedAt: d.FinishedAt, Deleted: d.Deleted}
			}
		}

		return nil
	})

	return out
}

// Create starts a rollout of the shape's latest revision, refusing up front what the
// bounds and settings cannot do (CheckFeasible), and answers an operation that follows it
// (Follow).
func (e *Engine) Create(ctx context.Context, ops *operations.Manager, ref refs.ShapeRef, notes string, by api.DeploymentRequestor) (*operations.Operation, error) {
	var deploymentID int64
	var number int
	err := refs.InShapeTx(ctx, e.db, ref, func(ctx context.Context, tx *sql.Tx, id int64, shape *db.Shape) (err error) {
		deploymentID = id
		err = CheckFeasible(ctx, tx, shape)
		if err != nil {
			return err
		}

		by, err = fleet.WithKey(ctx, tx, by, deploymentID)
		if err != nil {
			return err
		}

		number, err = Start(ctx, tx, shape, CauseAPI, by, notes, false, true)
		return err
	})
	if err != nil {
		return nil, err
	}

	e.reporter.RolloutEvent(by, ref, deploymentID, number, reporter.RolloutStarted)
	e.Poke()
	return e.Follow(ops, ref, deploymentID, number), nil
}

// CheckFeasible refuses, before anything changes, a rollout the shape's bounds and
// settings would never let move.
func CheckFeasible(ctx context.Context, tx *sql.Tx, shape *db.Shape) error {
	settings, err := shapes.ResolveRollout(shape.Rollout, shape.ScalingCurrent)
	if err != nil {
		return badRequest(err)
	}

	if settings.Strategy == api.RolloutCustom {
		return nil // the deployer decides how instances are replaced; its calls meet the bounds
	}

	rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
	if err != nil {
		return err
	}

	state := shapes.RolloutState{Settings: settings, Size: shape.ScalingCurrent, Minimum: shape.ScalingMinimum, Maximum: shape.ScalingMaximum, Target: shape.Revision}
	for _, row := range rows {
		if shapes.Counted(row) {
			state.Instances = append(state.Instances, shapes.RolloutInstance{Name: row.Name, Revision: row.Revision, Ready: true})
		}
	}

	plan := shapes.PlanRollout(state)
	if plan.Refuse != "" {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s cannot be rolled out: %s", shape.Name, plan.Refuse)
	}

	return nil
}

// Follow runs an operation that follows a rollout, its metadata showing progress. The
// rollout lives in the database, not in the operation: cancelling the operation stops the
// watching only (POST .../cancel cancels the rollout), and a restart resumes the rollout.
func (e *Engine) Follow(ops *operations.Manager, ref refs.ShapeRef, deploymentID int64, number int) *operations.Operation {
	op := ops.Start(operations.Args{
		Description:  fmt.Sprintf("Rolling out shape %s (rollout %d)", ref.Shape, number),
		Project:      ref.Project,
		DeploymentID: deploymentID,
		Resources: map[string][]string{
			"deployment_shapes":   {api.DeploymentShapeURL(ref.Project, ref.Name, ref.Shape)},
			"deployment_rollouts": {api.DeploymentShapeRolloutURL(ref.Project, ref.Name, ref.Shape, number)},
		},
		Run: func(ctx context.Context, op *operations.Operation) error {
			ticker := time.NewTicker(time.Second)
			defer ticker.Stop()
			for {
				rollout, err := Read(ctx, e.db, ref, number)
				if err != nil {
					return err
				}

				status := e.WithCounts(ctx, *rollout)
				op.SetMetadata(map[string]any{
					"rollout": number, "status": status.Status, "phase": status.Phase, "revision": status.Revision,
					"replaced": status.Updated, "total": status.Updated + status.Outdated, "ready": status.Ready, "reason": status.Reason,
				})

				switch status.Status {
				case api.RolloutComplete:
					return nil
				case api.RolloutFailed, api.RolloutCancelled, api.RolloutReverted:
					return fmt.Errorf("rollout %d %s: %s", number, status.Status, status.Reason)
				}

				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-ticker.C:
				}
			}
		},
	})

	// The answer names the rollout at once, before the first progress update.
	op.SetMetadata(map[string]any{"rollout": number})
	return op
}

// Act carries out a user's action on a rollout: pause, resume, cancel, promote or abort.
func (e *Engine) Act(ctx context.Context, ro db.Rollout, action string, by api.DeploymentRequestor) error {
	if ro.Finished() {
		return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is %s: it is over, start a new one to replace instances again", ro.Number, ro.Status)
	}

	switch action {
	case "pause":
		if UsesDeployer(ro) {
			// Its deployer is a process the daemon cannot hold still between two steps.
			return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is carried out by a deployer, which cannot be paused: cancel it (the deployer is deleted), or wait for it", ro.Number)
		}

		return e.Transition(ctx, ro, api.RolloutRunning, api.RolloutPaused, "paused", "paused by "+by.String(), reporter.RolloutPaused, by)
	case "resume":
		if ro.Phase == "wait-promote" {
			return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d waits for its canaries to be judged: promote or abort it", ro.Number)
		}

		return e.Transition(ctx, ro, api.RolloutPaused, api.RolloutRunning, "resumed", "resumed by "+by.String(), reporter.RolloutResumed, by)
	case "cancel":
		return e.Transition(ctx, ro, ro.Status, api.RolloutCancelled, "done", "cancelled by "+by.String()+": instances replaced so far stay", reporter.RolloutCancelled, by)
	case "promote":
		return e.promote(ctx, ro, by)
	case "abort":
		if ro.Strategy.Strategy != api.RolloutCanary || ro.Promoted {
			return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is not a canary waiting to be judged: cancel stops it, or roll the shape back", ro.Number)
		}

		return e.Revert(ctx, ro, ro.Status, CauseAbort, "aborted by "+by.String(), by)
	}

	return nil
}

// promote lets a canary rollout go on as a rolling one.
func (e *Engine) promote(ctx context.Context, ro db.Rollout, by api.DeploymentRequestor) error {
	if ro.Strategy.Strategy != api.RolloutCanary || ro.Promoted {
		return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is not a canary waiting to be promoted", ro.Number)
	}

	err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		promoted, status, phase, reason := true, api.RolloutRunning, "replace", "promoted by "+by.String()
		err := db.UpdateRollout(ctx, tx, ro.ID, ro.Status, db.RolloutUpdate{Promoted: &promoted, Status: &status, Phase: &phase, Reason: &reason, Progress: true}, time.Now())
		if errors.Is(err, db.ErrRolloutChanged) {
			return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d changed meanwhile: read it again", ro.Number)
		}

		if err != nil {
			return err
		}

		return fleet.RecordActivity(ctx, tx, ro.DeploymentID, api.DeploymentActivity{Shape: ro.Shape, Action: "rollout-promoted", Requestor: by, Why: fmt.Sprintf("rollout %d: %s", ro.Number, reason)})
	})
	if err != nil {
		return err
	}

	e.reporter.RolloutEvent(by, refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: ro.Project, Name: ro.Deployment}, Shape: ro.Shape}, ro.DeploymentID, ro.Number, reporter.RolloutPromoted)
	e.Poke()
	return nil
}
