package rollout

import (
	"context"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// inPlace brings outdated instances whose revision differs from the rollout's only in keys
// LXD applies live (shapes.LiveChanges: limits.cpu, limits.memory, ...) up to date without
// replacing them, at most as many per step as the rollout may have unavailable (or surge),
// through the same engine as a resize (fleet.Resizer: safe shrink included). It returns
// how many it updated; an instance refused in place is left to the replacement plan.
// A canary rollout not yet promoted replaces its canaries as usual, so that they are real.
func (e *Engine) inPlace(ctx context.Context, r db.Rollout, v *rolloutView) int {
	if v.settings.Strategy == api.RolloutCanary && !r.Promoted {
		return 0
	}

	// A revision none of whose outdated instances may go in place is not asked about again
	// at every step (a transaction each; a step comes after every launch and delete).
	if e.views.noneInPlace(r.ID, v.shape.Revision) {
		return 0
	}

	ref := refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: r.Project, Name: r.Deployment}, Shape: r.Shape}
	resizer := fleet.Resizer{
		DB:   e.db,
		Conn: e.lxd.Conn,
		Resized: func(row db.Instance, result api.DeploymentResizeResult) {
			if result.Result == api.ResizeApplied {
				e.reporter.Send(Requestor, r.DeploymentID, reporter.InstanceResized.Event(refs.InstanceRef{ShapeRef: ref, Instance: row.Name}, nil))
			}
		},
	}

	step := max(1, v.settings.Unavailable, v.settings.Surge)
	results, err := resizer.Once(ctx, fleet.ResizeTarget{DeploymentID: r.DeploymentID, ShapeID: r.ShapeID, Project: r.Project, Shape: r.Shape, By: Requestor, Batch: step, Limit: step, Replaces: true})
	if err != nil {
		e.logger.Info("rollout: in-place update failed", "rollout", r.Number, "shape", r.Shape, "err", err)
	}

	if err == nil && len(results) == 0 {
		e.views.setNoneInPlace(r.ID, v.shape.Revision)
	}

	updated := 0
	for name, result := range results {
		if result.Result == api.ResizeApplied {
			updated++
			continue
		}

		if result.Result != api.ResizeSkipped {
			e.logger.Info("rollout: instance left to replacement", "rollout", r.Number, "instance", name, "result", result.Result, "reason", result.Reason)
		}
	}

	return updated
}
