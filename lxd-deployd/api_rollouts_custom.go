package main

import (
	"context"
	"database/sql"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// withDeployer adds a rollout's transient instances (a custom rollout's deployer, the pre
// and post hooks: instance, exit code and output) to the rollout shown; rest.RolloutFor then
// drops their output for callers who are not admins.
func (a rolloutsAPI) withDeployer(ctx context.Context, r db.Rollout, out api.DeploymentRollout) api.DeploymentRollout {
	if r.Strategy.Strategy != api.RolloutCustom && r.Strategy.Pre == nil && r.Strategy.Post == nil {
		return out
	}

	_ = a.db.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
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

// errPauseCustom refuses to pause a custom rollout: its deployer is a process the daemon
// cannot hold still between two steps.
func errPauseCustom(ro db.Rollout) error {
	return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is carried out by a deployer, which cannot be paused: cancel it (the deployer is deleted), or wait for it", ro.Number)
}
