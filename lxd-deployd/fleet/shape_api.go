package fleet

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// What the shape and deployment handlers show of the fleet: how a shape's instances sit
// over its placement, its warm pool and the activity log; and a rebalance by name.

// PlacementStatus sums up how a shape's instances sit over its placement's domains, from
// the records' members and the last probe's view of the LXD cluster: nil without a
// placement, outside an LXD cluster, or when the targets name what LXD does not have (a
// launch then says so).
func PlacementStatus(ctx context.Context, cluster *db.Cluster, view backend.ClusterView, shape *db.Shape) *api.DeploymentShapePlacementStatus {
	if shape.Placement == nil || !view.Clustered {
		return nil
	}

	var counts map[string]int
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
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

// PoolInstances are a shape's warm pool instances as the API shows them.
func PoolInstances(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef) ([]api.DeploymentShapeWarmPoolInstance, error) {
	var rows []db.PoolInstance
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := refs.ShapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		rows, err = db.GetPoolInstances(ctx, tx, shape.ID)
		return err
	})
	if err != nil {
		return nil, err
	}

	result := make([]api.DeploymentShapeWarmPoolInstance, 0, len(rows))
	for _, row := range rows {
		result = append(result, api.DeploymentShapeWarmPoolInstance{Name: row.Name, State: row.State, TemplateHash: row.TemplateHash, CreatedAt: row.CreatedAt})
	}

	return result, nil
}

// Activity reads a deployment's activity log (filter.DeploymentID is filled in).
func Activity(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, filter db.ActivityFilter) ([]api.DeploymentActivity, error) {
	var entries []api.DeploymentActivity
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		filter.DeploymentID, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		entries, err = db.GetActivity(ctx, tx, filter)
		return err
	})

	return entries, err
}

// StartRebalanceOf starts a rebalance of the shape ref names (StartRebalance).
func (f *Fleet) StartRebalanceOf(ctx context.Context, ref refs.ShapeRef, by api.DeploymentRequestor) (*operations.Operation, error) {
	var deploymentID int64
	err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		deploymentID, _, err = refs.ShapeInTx(ctx, tx, ref)
		return err
	})
	if err != nil {
		return nil, err
	}

	return f.StartRebalance(ctx, ref, deploymentID, by)
}
