package main

import (
	"errors"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
)

// startMetrics builds the daemon's metrics and hooks them to the parts that report into
// them (the LXD probe, webhook attempts); the rest report through the reporter.
func (d *daemon) startMetrics() {
	d.metrics = metrics.New(metrics.Sources{
		Snapshot:           metricsSnapshot(d.db),
		LXDReachable:       func() bool { return d.lxd.Status().Online },
		OperationsRunning:  d.ops.Running,
		Leader:             d.db.IsLeader,
		Members:            d.db.Members,
		TransactionRetries: d.db.Retries,
		Placement:          placementSnapshot(d.db, d.lxd),
		// The doorkeeper is built after the metrics (wire); a scrape before reads none.
		Traffic: func() []metrics.TrafficStat { return d.doors.TrafficStats() },
	})
	d.lxd.OnProbe = func(took time.Duration, err error) { d.metrics.LXDCall("probe", took, err) }
	d.webhooks.OnAttempt = func(delivery db.Delivery, took time.Duration, err error) {
		d.metrics.WebhookAttempt(delivery.Project, delivery.Deployment, took, err)
	}
}

// errUsageUnavailable marks a fetch of LXD's metrics that gave no usage.
var errUsageUnavailable = errors.New("LXD gave no usage")

// usageFetched records a fetch of LXD's /1.0/metrics for a listing's usage: at 1,000
// instances LXD takes seconds of CPU to build it again, so how often listings make it do
// so is worth seeing.
func (d *daemon) usageFetched(took time.Duration, ok bool) {
	var err error
	if !ok {
		err = errUsageUnavailable
	}

	d.metrics.LXDCall("metrics", took, err)
}
