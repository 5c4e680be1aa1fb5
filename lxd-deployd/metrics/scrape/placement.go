package scrape

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
)

// Placement reads instances per shape and LXD member from the records and the members from
// the last probe of LXD (observed: backend.LXD.Cluster): a scrape never calls LXD
// (doc/placement.md).
func Placement(cluster *db.Cluster, observed func() backend.ClusterView) func(ctx context.Context) ([]metrics.PlacementStat, []metrics.ClusterMemberStat, error) {
	return func(ctx context.Context) ([]metrics.PlacementStat, []metrics.ClusterMemberStat, error) {
		view := observed()
		if !view.Clustered {
			return nil, nil, nil
		}

		var counts []db.MemberCount
		err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			counts, err = db.GetMemberCounts(ctx, tx)
			return err
		})
		if err != nil {
			return nil, nil, err
		}

		members := shapes.ClusterMembers(view)
		memberStats := make([]metrics.ClusterMemberStat, 0, len(members))
		for _, m := range members {
			memberStats = append(memberStats, metrics.ClusterMemberStat{Name: m.Name, Online: m.Online})
		}

		stats := make([]metrics.PlacementStat, 0, len(counts))
		for _, c := range counts {
			stats = append(stats, metrics.PlacementStat{
				Project: c.Project, Deployment: c.Deployment, Shape: c.Shape, Member: c.Member, Instances: c.Count,
				Unreachable: shapes.Unreachable(c.Member, members),
			})
		}

		return stats, memberStats, nil
	}
}
