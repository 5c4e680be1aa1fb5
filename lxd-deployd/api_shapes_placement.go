package main

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// placementStatus sums up how a shape's instances sit over its placement's domains, from
// the records' members and the last probe's view of the LXD cluster: nil without a
// placement, outside an LXD cluster, or when the targets name what LXD does not have (a
// launch then says so).
func placementStatus(ctx context.Context, cluster *db.Cluster, view backend.ClusterView, shape *db.Shape) *api.DeploymentShapePlacementStatus {
	if shape.Placement == nil || !view.Clustered {
		return nil
	}

	var counts map[string]int
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		counts, err = db.GetShapeLocationCounts(ctx, tx, shape.ID)
		return err
	})
	if err != nil {
		return nil
	}

	members := shapes.ClusterMembers(view)
	domains, err := shapes.Domains(shape.Placement, members, counts)
	if err != nil {
		return nil
	}

	unreachable := 0
	for member, n := range counts {
		if shapes.Unreachable(member, members) {
			unreachable += n
		}
	}

	return shapes.PlacementStatus(domains, unreachable)
}
