package main

import (
	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// withLocation fills in the LXD member an instance runs on (LXD's word when it answered,
// else the record's) and reports it unreachable while LXD says that member is offline: LXD
// itself then shows such an instance in status Error, which would read as the instance's
// fault (doc/placement.md).
func withLocation(instance *api.DeploymentInstance, row db.Instance, live *lxdapi.Instance, view backend.ClusterView) {
	instance.Location = row.Location
	if live != nil && live.Location != "" && live.Location != "none" {
		instance.Location = live.Location
	}

	if shapes.Unreachable(instance.Location, shapes.ClusterMembers(view)) {
		instance.Status = api.InstanceStatusUnreachable
	}
}
