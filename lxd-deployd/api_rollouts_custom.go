package main

import (
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

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
