// Package scrape builds the daemon's metrics (package metrics) with the values a scrape of
// /1.0/metrics reads: the records' counts in one dqlite transaction, and of LXD only what
// the daemon has already observed (the connection's last probe, its view of the cluster
// members). A scrape never calls LXD: a Prometheus scraping every few seconds must not add
// load to an LXD that may be the thing in trouble.
package scrape

import (
	"context"
	"database/sql"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/doorkeeper"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// New builds the daemon's metrics with the live values a scrape reads. The parts that
// count into them get them when they are made (webhook attempts), or when they run (LXD
// probes, whose status the metrics read); the rest count through the reporter.
func New(cluster *db.Cluster, lxd *backend.LXD, ops *operations.Manager, doors *doorkeeper.Keeper) *metrics.Metrics {
	return metrics.New(metrics.Sources{
		Snapshot:           Counts(cluster),
		LXDReachable:       func() bool { return lxd.Status().Online },
		OperationsRunning:  ops.Running,
		Leader:             cluster.IsLeader,
		Members:            cluster.Members,
		TransactionRetries: cluster.Retries,
		Placement:          Placement(cluster, lxd.Cluster),
		Traffic:            doors.TrafficStats,
	})
}

// LXDMetricsFetched records each fetch of LXD's /1.0/metrics for the observed usage in m
// (lxd_calls_total{kind="metrics"}): at 1,000 instances LXD takes seconds of CPU to build
// it again, so how often the daemon makes it do so is worth seeing.
func LXDMetricsFetched(m *metrics.Metrics) func(took time.Duration, err error) {
	return func(took time.Duration, err error) {
		m.LXDCall("metrics", took, err)
	}
}

// Counts reads the scrape-time gauges in one transaction.
func Counts(cluster *db.Cluster) func(ctx context.Context) (metrics.Snapshot, error) {
	return func(ctx context.Context) (metrics.Snapshot, error) {
		var snap metrics.Snapshot
		err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			shapeCounts, err := db.GetShapeCounts(ctx, tx)
			if err != nil {
				return err
			}

			deliveries, err := db.GetDeliveryCounts(ctx, tx)
			if err != nil {
				return err
			}

			snap = metrics.Snapshot{Shapes: make([]metrics.ShapeStat, 0, len(shapeCounts)), Deliveries: make([]metrics.DeliveryStat, 0, len(deliveries))}
			for _, s := range shapeCounts {
				snap.Shapes = append(snap.Shapes, ShapeStat(s))
			}

			for _, d := range deliveries {
				snap.Deliveries = append(snap.Deliveries, metrics.DeliveryStat(d))
			}

			return nil
		})
		return snap, err
	}
}

// ShapeStat is a shape's counts as the metrics report them: ready follows rules.Ready (the
// healthy ones when the shape has health checks), read from the counts without a call to
// LXD.
func ShapeStat(s db.ShapeCount) metrics.ShapeStat {
	stat := metrics.ShapeStat{
		Project: s.Project, Deployment: s.Deployment, Shape: s.Shape,
		Current: s.Current, Minimum: s.Minimum, Maximum: s.Maximum,
		Outdated: s.Outdated, Revision: s.Revision,
		Healthy: s.Healthy, Unhealthy: s.Unhealthy, Starting: s.Starting, Unknown: s.Unknown,
		LaunchingWait: s.LaunchingWait, TerminatingWait: s.TerminatingWait,
		WarmPoolReady: s.WarmPoolReady, Degraded: s.Degraded, HealHeld: s.HealHeld, CheckBroken: s.CheckBroken,
		RolloutsRunning: s.RolloutsRunning, RolloutsPaused: s.RolloutsPaused,
		HasHooks: s.HasHooks,
	}

	_, stat.HasHealthChecks = health.Parse(s.Health)
	stat.Ready = rules.ReadyCount(stat.HasHealthChecks, s.Settled, s.SettledHealthy)

	for key, limit := range map[string]string{api.LimitCPU: s.LimitCPU, api.LimitMemory: s.LimitMemory} {
		value, err := validate.ParseResource(key, limit)
		if err == nil {
			if stat.ResourceLimits == nil {
				stat.ResourceLimits = map[string]float64{}
			}

			stat.ResourceLimits[key] = float64(value)
		}
	}

	if s.WarmPool != nil && s.WarmPool.Size > 0 {
		stat.HasWarmPool = true
		stat.WarmPoolSize = s.WarmPool.Size
	}

	return stat
}
