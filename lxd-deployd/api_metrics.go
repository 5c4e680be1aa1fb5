package main

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// metricsAPI serves /1.0/metrics.
type metricsAPI struct {
	metrics *metrics.Metrics
}

// get writes the exposition; the library negotiates OpenMetrics or the text format from
// the Accept header, as Prometheus expects.
func (a metricsAPI) get(r *http.Request) response.Response {
	return response.ManualResponse(func(w http.ResponseWriter) error {
		a.metrics.Handler().ServeHTTP(w, r)
		return nil
	})
}

// allowMetrics lets admins and metrics certificates through, as LXD does.
func allowMetrics(r *http.Request) error {
	caller := auth.CallerFromContext(r.Context())
	if caller.IsAdmin() || (caller.Trusted && caller.CertificateType == api.CertificateTypeMetrics) {
		return nil
	}

	if !caller.Trusted {
		return rest.Forbidden("not trusted: scrape with a certificate of type metrics (lxd-deploy config trust add --type metrics)")
	}

	return rest.Forbidden("a %s certificate may not read metrics: use a metrics or client certificate", caller.CertificateType)
}

// metricsSnapshot reads the scrape-time gauges in one transaction.
func metricsSnapshot(cluster *db.Cluster) func(ctx context.Context) (metrics.Snapshot, error) {
	return func(ctx context.Context) (metrics.Snapshot, error) {
		var snap metrics.Snapshot
		err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			shapes, err := db.GetShapeCounts(ctx, tx)
			if err != nil {
				return err
			}

			deliveries, err := db.GetDeliveryCounts(ctx, tx)
			if err != nil {
				return err
			}

			snap = metrics.Snapshot{Shapes: make([]metrics.ShapeStat, 0, len(shapes)), Deliveries: make([]metrics.DeliveryStat, 0, len(deliveries))}
			for _, s := range shapes {
				snap.Shapes = append(snap.Shapes, shapeStat(s))
			}

			for _, d := range deliveries {
				snap.Deliveries = append(snap.Deliveries, metrics.DeliveryStat(d))
			}

			return nil
		})
		return snap, err
	}
}

// shapeStat is a shape's counts as the metrics report them: ready follows rules.Ready (the
// healthy ones when the shape has health checks), read from the counts without a call to
// LXD.
func shapeStat(s db.ShapeCount) metrics.ShapeStat {
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
