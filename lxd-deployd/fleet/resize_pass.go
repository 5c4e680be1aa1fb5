package fleet

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ResizeRequestor names the in-place pass in the activity log and events.
var ResizeRequestor = api.InternalRequestor("resize")

// InPlaceKeeper is the periodic in-place pass (issue 22, "retry on the next round"): a
// resize operation tries its rounds and ends, so an instance a safe shrink refused (or
// one LXD failed to update, or one the daemon restarted under, or a launch reserved from
// the old revision just before a resize) would stay outdated until the next resize or
// rollout. Every round the keeper brings running instances whose revision differs from
// their shape's latest only in live keys up to date in place, through the same Resizer
// (one LXD listing per shape with work, PlanResize, the safe-shrink rule). It leaves alone
// shapes with an active rollout (the rollout's in-place step is theirs) and shapes whose
// resize operation still runs here. A refusal is said once per instance and revision
// (Resizer.reportRefusals). It runs on the holder of the instances lease.
type InPlaceKeeper struct {
	db       *db.Cluster
	lxd      *backend.LXD
	ops      *operations.Manager
	reporter Reporter
	resized  func(project string, deployment string, shape string, result string)
	logger   *slog.Logger
	wake     loop.Loop

	// client is LXD (k.lxd.Conn; a fake in tests).
	client func() (*backend.Conn, error)
}

func newInPlaceKeeper(f *Fleet) *InPlaceKeeper {
	k := &InPlaceKeeper{db: f.db, lxd: f.lxd, ops: f.ops, reporter: f.reporter, logger: f.logger, wake: loop.New()}
	if f.lxd != nil {
		k.client = f.lxd.Conn
	}

	if f.metrics != nil {
		k.resized = f.metrics.Resize
	}

	return k
}

// Poke makes the pass look now rather than at its next tick (after a resize operation
// that left instances refused, say).
func (k *InPlaceKeeper) Poke() {
	if k != nil {
		k.wake.Poke()
	}
}

// Run does a round at once (what a restart interrupted), then every interval or when
// poked, until ctx ends.
func (k *InPlaceKeeper) Run(ctx context.Context, interval time.Duration) {
	k.wake.Poke()
	k.wake.Run(ctx, interval, k.logger, "in-place pass failed", k.Round)
}

// inPlaceCandidate is a shape with an outdated running instance, and where it lives.
type inPlaceCandidate struct {
	shape      db.Shape
	project    string
	deployment string
}

// Round looks once at every shape.
func (k *InPlaceKeeper) Round(ctx context.Context) error {
	if k.client == nil {
		return nil
	}

	candidates, err := k.candidates(ctx)
	if err != nil || len(candidates) == 0 {
		return err
	}

	busy := k.resizing()
	var errs []error
	for _, c := range candidates {
		ref := refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: c.project, Name: c.deployment}, Shape: c.shape.Name}
		if busy[api.DeploymentShapeURL(c.project, c.deployment, c.shape.Name)] {
			continue // its resize operation is still at it
		}

		batch := 1
		resolved, err := shapes.ResolveRollout(c.shape.Rollout, c.shape.ScalingCurrent)
		if err == nil {
			batch = max(1, resolved.Unavailable)
		}

		resizer := Resizer{DB: k.db, Conn: k.client, Resized: k.report(ref, c.shape.DeploymentID)}
		target := ResizeTarget{DeploymentID: c.shape.DeploymentID, ShapeID: c.shape.ID, Project: c.project, Shape: c.shape.Name, By: ResizeRequestor, Batch: batch, ResizesOnly: true}
		results, err := resizer.Once(ctx, target)
		if err != nil {
			errs = append(errs, err)
			continue
		}

		for name, result := range results {
			if result.Result == api.ResizeApplied {
				k.logger.Info("in-place pass: instance brought up to date", "instance", name, "shape", c.shape.Name, "limits", result.Limits)
			}
		}
	}

	return errors.Join(errs...)
}

// candidates reads, in one transaction, the shapes that have a running instance of an
// older revision and no active rollout. Whether the difference is live only is the
// Resizer's to decide (from the revisions, before it asks LXD anything).
func (k *InPlaceKeeper) candidates(ctx context.Context) ([]inPlaceCandidate, error) {
	var out []inPlaceCandidate
	err := k.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		out = nil
		// Which shapes have an outdated created instance (shapes.Outdated) is asked of the
		// database rather than read row by row: at rest, none has (issue 20).
		ids, err := db.GetOutdatedShapeIDs(ctx, tx)
		if err != nil || len(ids) == 0 {
			return err
		}

		outdated := map[int64]bool{}
		for _, id := range ids {
			outdated[id] = true
		}

		all, err := db.GetShapes(ctx, tx, db.ShapeFilter{})
		if err != nil {
			return err
		}

		deployments, err := db.GetDeploymentRows(ctx, tx)
		if err != nil {
			return err
		}

		byID := map[int64]db.Deployment{}
		for _, d := range deployments {
			byID[d.ID] = d
		}

		for _, s := range all {
			d, ok := byID[s.DeploymentID]
			if !outdated[s.ID] || !ok {
				continue
			}

			active, err := db.GetActiveRollout(ctx, tx, s.ID)
			if err != nil {
				return err
			}

			if active != nil {
				continue // a running or paused rollout owns the shape's updates
			}

			out = append(out, inPlaceCandidate{shape: s, project: d.Project, deployment: d.Name})
		}

		return nil
	})

	return out, err
}

// resizing names the shapes (by URL) with a resize operation running on this member.
func (k *InPlaceKeeper) resizing() map[string]bool {
	busy := map[string]bool{}
	if k.ops == nil {
		return busy
	}

	for _, op := range k.ops.List(func(int64) bool { return true }) {
		state := op.API()
		if state.StatusCode != lxdapi.Running && state.StatusCode != lxdapi.Pending {
			continue
		}

		for _, source := range state.Resources["deployment_shapes"] {
			busy[source] = true
		}
	}

	return busy
}

// report says what the pass did to one instance, as a resize operation does: /1.0/events,
// the governor's webhook (with the reason) and /1.0/metrics. A failed LXD update (the
// instance going away meanwhile, say) is only logged: it is retried every round, and
// saying it every round would bury the rest.
func (k *InPlaceKeeper) report(ref refs.ShapeRef, deploymentID int64) func(row db.Instance, result api.DeploymentResizeResult) {
	return func(row db.Instance, result api.DeploymentResizeResult) {
		if result.Result == api.ResizeFailed {
			k.logger.Info("in-place pass: instance not updated, retried next round", "instance", row.Name, "shape", ref.Shape, "reason", result.Reason)
			return
		}

		k.reportResize(ResizeRequestor, ref, deploymentID, row, result)
	}
}
