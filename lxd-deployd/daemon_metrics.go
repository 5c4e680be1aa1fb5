package main

import (
	"errors"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/doorkeeper"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
)

// newMetrics builds the daemon's metrics with the live values a scrape reads. The parts
// that count into them get them when they are made (webhook attempts), or when they run
// (LXD probes, whose status the metrics read); the rest count through the reporter.
func newMetrics(cluster *db.Cluster, lxd *backend.LXD, ops *operations.Manager, doors *doorkeeper.Keeper) *metrics.Metrics {
	return metrics.New(metrics.Sources{
		Snapshot:           metricsSnapshot(cluster),
		LXDReachable:       func() bool { return lxd.Status().Online },
		OperationsRunning:  ops.Running,
		Leader:             cluster.IsLeader,
		Members:            cluster.Members,
		TransactionRetries: cluster.Retries,
		Placement:          placementSnapshot(cluster, lxd),
		Traffic:            doors.TrafficStats,
	})
}

// errUsageUnavailable marks a fetch of LXD's metrics that gave no usage.
var errUsageUnavailable = errors.New("LXD gave no usage")

// usageFetched records each fetch of LXD's /1.0/metrics for the listings' usage in m: at
// 1,000 instances LXD takes seconds of CPU to build it again, so how often the daemon
// makes it do so is worth seeing.
func usageFetched(m *metrics.Metrics) func(took time.Duration, ok bool) {
	return func(took time.Duration, ok bool) {
		var err error
		if !ok {
			err = errUsageUnavailable
		}

		m.LXDCall("metrics", took, err)
	}
}
