package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// healthMetrics are the health checker's families: what it achieves against what the
// shapes ask of it, so an operator sees exec checks falling behind before instances go
// unchecked.
type healthMetrics struct {
	checks   *prometheus.CounterVec
	duration *prometheus.HistogramVec
	overdue  *prometheus.GaugeVec
	reports  prometheus.Histogram
}

// registerHealth adds the health families to m's registry (New calls it).
func (m *Metrics) registerHealth() {
	h := &healthMetrics{
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "health_checks_total",
			Help: "Health checks the checker ran, by kind (exec, http, tcp, ttl: a missed report) and result (passed, failed, error: the check could not run)."}, []string{"kind", "result"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "health_check_duration_seconds",
			Help: "Time one check took, by kind (an exec check's LXD exec and wait included).", Buckets: prometheus.DefBuckets}, []string{"kind"}),
		overdue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: namespace, Name: "health_checks_overdue",
			Help: "Instances waiting for their check past its due time by more than a fifth of the interval plus a second, by kind: above 0, the checks do not keep up (choose longer intervals, or ttl, http or tcp checks instead of exec)."}, []string{"kind"}),
		reports: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "health_report_batch_size",
			Help: "ttl reports recorded per database transaction on this member.", Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128}}),
	}

	m.registry.MustRegister(h.checks, h.duration, h.overdue, h.reports)
	m.health = h
}

// HealthCheck records one check's end: its kind, result and how long it took.
func (m *Metrics) HealthCheck(kind string, result string, took time.Duration) {
	if m == nil {
		return
	}

	m.health.checks.WithLabelValues(kind, result).Inc()
	m.health.duration.WithLabelValues(kind).Observe(took.Seconds())
}

// HealthOverdue sets how many instances of a kind wait past one interval for their check.
func (m *Metrics) HealthOverdue(kind string, n int) {
	if m == nil {
		return
	}

	m.health.overdue.WithLabelValues(kind).Set(float64(n))
}

// HealthReportBatch records how many ttl reports shared one transaction.
func (m *Metrics) HealthReportBatch(n int) {
	if m == nil {
		return
	}

	m.health.reports.Observe(float64(n))
}
