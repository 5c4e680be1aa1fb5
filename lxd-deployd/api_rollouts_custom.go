package main

import (
	"context"
	"database/sql"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// withDeployer adds a custom rollout's deployer (its instance, exit code and output) to the
// rollout shown; rolloutFor then drops the output for callers who are not admins.
func (a rolloutsAPI) withDeployer(ctx context.Context, r db.Rollout, out api.DeploymentRollout) api.DeploymentRollout {
	if r.Strategy.Strategy != api.RolloutCustom {
		return out
	}

	var d *db.Deployer
	err := a.db.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		d, err = db.GetDeployer(ctx, tx, r.ID)
		return err
	})
	if err != nil || d == nil {
		return out
	}

	out.Deployer = &api.DeploymentRolloutDeployer{Instance: d.Instance, ExitCode: d.ExitCode, Output: d.Output, StartedAt: d.StartedAt, FinishedAt: d.FinishedAt, Deleted: d.Deleted}
	return out
}

// deployerFor is a deployer as a caller who is not an admin may see it: its output may
// hold whatever the deployer printed, so only admins get it (as a health check's).
func deployerFor(d *api.DeploymentRolloutDeployer) *api.DeploymentRolloutDeployer {
	if d == nil {
		return nil
	}

	shown := *d
	shown.Output = ""
	return &shown
}

// errPauseCustom refuses to pause a custom rollout: its deployer is a process the daemon
// cannot hold still between two steps.
func errPauseCustom(ro db.Rollout) error {
	return lxdapi.StatusErrorf(http.StatusConflict, "rollout %d is carried out by a deployer, which cannot be paused: cancel it (the deployer is deleted), or wait for it", ro.Number)
}
