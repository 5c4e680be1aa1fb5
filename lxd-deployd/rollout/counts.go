package rollout

import (
	"context"
	"database/sql"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
)

// Target is the revision a rollout's instances are compared with. While the rollout runs
// (or waits to be promoted) it is the shape's latest: a running rollout follows the latest
// revision (a change of the template during it supersedes the one it started for, Start
// starts no second rollout, and the step records the new target), so an instance at the
// revision the rollout recorded is outdated as soon as a newer one exists, whether or not
// a step has recorded it yet. Once the rollout finished it is the revision it reached: a
// later change is the next rollout's to replace.
func Target(r db.Rollout, shape *db.Shape) int {
	if r.Finished() {
		return r.Revision
	}

	return shape.Revision
}

// rolloutState is what a rollout knows of its shape's instances (rows, with live LXD's
// view of them): those counted toward the size, each ready or not (shapes.ReadyFor) and
// when it last started, and how many are on their way out; the bounds and the settings it
// started with, and its target (Target). A step plans from it and the API counts from it
// (Counts), so the two cannot count apart.
func rolloutState(r db.Rollout, shape *db.Shape, rows []db.Instance, live map[string]lxdapi.Instance, settings shapes.Rollout, now time.Time) shapes.RolloutState {
	state := shapes.RolloutState{Settings: settings, Size: r.Size, Minimum: shape.ScalingMinimum, Maximum: shape.ScalingMaximum, Target: Target(r, shape), Promoted: r.Promoted}
	for _, row := range rows {
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

		state.Instances = append(state.Instances, shapes.RolloutInstance{
			Name: row.Name, Revision: row.Revision, Creating: row.State == db.InstanceCreating, Location: row.Location,
			Ready:        shapes.ReadyFor(shape.Health, row, instance, settings.MinReady, now),
			RunningSince: shapes.RunningSince(row, instance),
		})
	}

	return state
}

// Counts are a rollout's instance counts: of the instances that count toward the size,
// those at its target revision (updated, and of them the ready ones) and those it still
// replaces (outdated), as its steps count them. client nil means LXD cannot be asked: no
// instance is ready then.
func (e *Engine) Counts(ctx context.Context, client *backend.Conn, r db.Rollout) (updated int, ready int, outdated int, err error) {
	var shape *db.Shape
	var rows []db.Instance
	err = e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		shape, err = ShapeByID(ctx, tx, r.DeploymentID, r.ShapeID)
		if err != nil {
			return err
		}

		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: r.ShapeID})
		return err
	})
	if err != nil {
		return 0, 0, 0, err
	}

	// Counts are shown whatever LXD says: LXD's view only decides readiness, and settings
	// the record no longer resolves only the minimum time to ready. The view is the
	// engine's, brought up to what rows need as a step's would be (a listing now and then,
	// else only the instances whose record changed, live_view.go): the operation following
	// a rollout reads its counts every second, and a listing of the project each time cost
	// LXD, at 1,000 instances, as much CPU as the rollout's own work.
	var live map[string]lxdapi.Instance
	if client != nil {
		live, _ = e.views.refresh(client, r, rows)
	}

	settings, _ := shapes.ResolveRollout(r.Strategy, r.Size)
	state := rolloutState(r, shape, rows, live, settings, time.Now())
	updated, ready, outdated = shapes.CountRollout(state.Instances, state.Target)
	return updated, ready, outdated, nil
}
