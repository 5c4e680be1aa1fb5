// Package metrics is lxd-deployd's own /1.0/metrics: counters and histograms kept in memory
// as things happen, and gauges read at scrape time from one database snapshot. It uses the
// Prometheus client library, so the exposition (text or OpenMetrics) is the library's, never
// hand-written. No label ever holds an instance name: label sets stay bounded by the number
// of shapes, routes and LXD call kinds.
package metrics

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// namespace prefixes every family: lxd_deployd_...
const namespace = "lxd_deployd"

// Results of a launch or delete asked of the governor API.
const (
	ResultOK      = "ok"
	ResultRefused = "refused_bound"
	ResultFailed  = "failed"
)

// ShapeStat is one shape's size against its bounds, and the state of its instances, warm
// pool and rollouts. The instance counts are over the instances the shape counts (Current).
type ShapeStat struct {
	Project    string
	Deployment string
	Shape      string
	Current    int
	Minimum    int
	Maximum    int

	// Ready instances: created, out of their launching:wait, healthy when the shape has
	// health checks (what a rollout waits for, LXD's own state aside).
	Ready int

	// Outdated instances run an older revision than the shape's latest (Revision).
	Outdated int
	Revision int

	// Instances by their last health verdict.
	Healthy   int
	Unhealthy int
	Starting  int
	Unknown   int

	// Instances waiting in a lifecycle hook.
	LaunchingWait   int
	TerminatingWait int

	// The warm pool's instances ready to be taken, and the size it keeps.
	WarmPoolReady int
	WarmPoolSize  int

	// Degraded: autohealing gave up on the shape.
	Degraded bool

	// HealHeld: autohealing holds for the shape; CheckBroken: its check starts nowhere.
	HealHeld    bool
	CheckBroken bool

	// Active rollouts (one at most).
	RolloutsRunning int
	RolloutsPaused  int

	// ResourceLimits are the template's limits by resource (limits.cpu as a CPU count,
	// limits.memory in bytes) of a shape with resource_bounds; nil for the others.
	ResourceLimits map[string]float64

	// What the shape sets: the families of a feature it does not use are left out, so a
	// scrape of many plain shapes stays small.
	HasHealthChecks bool
	HasHooks        bool
	HasWarmPool     bool
}

// DeliveryStat counts a deployment's webhook deliveries in one status.
type DeliveryStat struct {
	Project    string
	Deployment string
	Status     string
	Count      int
}

// Snapshot is what a scrape reads from the database.
type Snapshot struct {
	Shapes     []ShapeStat
	Deliveries []DeliveryStat
}

// Sources are the live values a scrape reads. Every field is optional; a missing one leaves
// its family out.
type Sources struct {
	// Snapshot reads shapes and webhook deliveries in one database transaction.
	Snapshot func(ctx context.Context) (Snapshot, error)

	// LXDReachable reports whether LXD answered the last probe (no call to LXD).
	LXDReachable func() bool

	// OperationsRunning counts the background operations still running.
	OperationsRunning func() int

	// Leader reports whether this member is the dqlite leader.
	Leader func(ctx context.Context) (bool, error)

	// Members counts the dqlite cluster's members.
	Members func(ctx context.Context) (int, error)

	// TransactionRetries is how many database transactions were retried since start.
	TransactionRetries func() uint64

	// Placement reads instances per shape and LXD member, and the members (placement.go).
	Placement func(ctx context.Context) ([]PlacementStat, []ClusterMemberStat, error)

	// Traffic returns the front door's last figures per shape and instance (traffic.go).
	Traffic func() []TrafficStat
}

// Metrics holds every family of the daemon. A nil *Metrics records nothing, so code paths
// (and unit tests) without metrics need no checks.
type Metrics struct {
	registry *prometheus.Registry

	launches       *prometheus.CounterVec
	deletes        *prometheus.CounterVec
	launchDuration *prometheus.HistogramVec
	deleteDuration *prometheus.HistogramVec
	scaleRequests  *prometheus.CounterVec

	apiRequests *prometheus.CounterVec
	apiDuration *prometheus.HistogramVec

	lxdCalls    *prometheus.CounterVec
	lxdDuration *prometheus.HistogramVec

	webhookAttempts *prometheus.CounterVec
	webhookDuration *prometheus.HistogramVec

	templateExpansion prometheus.Histogram

	replacements   *prometheus.CounterVec
	rolloutsEnded  *prometheus.CounterVec
	hookWaitsEnded *prometheus.CounterVec
	resizes        *prometheus.CounterVec

	health *healthMetrics
}

var shapeLabels = []string{"project", "deployment", "shape"}

// New registers every family, the Go and process collectors, and the scrape-time gauges
// read from sources.
func New(sources Sources) *Metrics {
	m := &Metrics{registry: prometheus.NewRegistry()}
	counter := func(name string, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, labels)
		m.registry.MustRegister(c)
		return c
	}

	histogram := func(name string, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: name, Help: help, Buckets: buckets}, labels)
		m.registry.MustRegister(h)
		return h
	}

	// Launches take seconds (image unpack, start); API calls and LXD calls milliseconds.
	slow := []float64{0.25, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300}
	fast := prometheus.DefBuckets

	m.launches = counter("instance_launches_total", "Instance launches asked of the governor API, by result: ok, refused_bound (the shape is at its maximum), failed.", append(shapeLabels, "result")...)
	m.deletes = counter("instance_deletes_total", "Instance deletes asked of the governor API, by result: ok, refused_bound (the shape is at its minimum), failed.", append(shapeLabels, "result")...)
	m.launchDuration = histogram("instance_launch_duration_seconds", "Time from a launch's reservation until its instance runs in LXD (successful launches).", slow, shapeLabels...)
	m.deleteDuration = histogram("instance_delete_duration_seconds", "Time from a delete's reservation until LXD has removed the instance (successful deletes).", slow, shapeLabels...)
	m.scaleRequests = counter("scale_requests_total", "Scale requests queued for governors.", shapeLabels...)
	m.apiRequests = counter("api_requests_total", "API requests by route template, method and HTTP status code.", "route", "method", "code")
	m.apiDuration = histogram("api_request_duration_seconds", "API request latency by route template and method (streams such as /1.0/events count until they end).", fast, "route", "method")
	m.lxdCalls = counter("lxd_calls_total", "Calls to LXD by kind (create, delete, list, state, probe, metrics) and result (ok, error).", "kind", "result")
	m.lxdDuration = histogram("lxd_call_duration_seconds", "Latency of calls to LXD by kind, operations waited for included.", slow, "kind")
	m.webhookAttempts = counter("webhook_delivery_attempts_total", "Webhook delivery attempts by result (ok, error).", "project", "deployment", "result")
	m.webhookDuration = histogram("webhook_delivery_duration_seconds", "Latency of webhook delivery attempts, answered or not.", fast, "project", "deployment")
	m.templateExpansion = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: namespace, Name: "template_expansion_duration_seconds", Help: "Time spent expanding templated configs.", Buckets: fast})
	m.registry.MustRegister(m.templateExpansion)
	m.replacements = counter("autoheal_replacements_total", "Replacements autohealing started, by result: ok (the replacement was launched; the old instance goes next), failed (the replacement could not be launched), gave_up (not started: too many failed in a row, the shape is now degraded).", append(shapeLabels, "result")...)
	m.rolloutsEnded = counter("rollouts_finished_total", "Rollouts that ended, by final status: complete, failed, cancelled, reverted.", append(shapeLabels, "status")...)
	m.hookWaitsEnded = counter("lifecycle_hook_waits_ended_total", "Lifecycle hook waits ended, by hook (launching:wait, terminating:wait), action (continue, abandon) and by whom (request: an action was posted; timeout: the shape's default_action).", append(shapeLabels, "hook", "action", "by")...)

	m.resizes = counter("shape_resizes_total", "Instances a resize reached, by result: applied (the new limits run live), refused (a lower memory limit would not fit the instance's usage plus the margin, or LXD cannot do it live: left outdated), failed (LXD refused the update).", append(shapeLabels, "result")...)

	m.registerHealth()
	m.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.registry.MustRegister(newStateCollector(sources))
	if sources.Placement != nil {
		m.registry.MustRegister(newPlacementCollector(sources.Placement))
	}

	if sources.Traffic != nil {
		m.registry.MustRegister(newTrafficCollector(sources.Traffic))
	}
	return m
}

// Handler serves the exposition: OpenMetrics to clients asking for it (Prometheus does),
// the Prometheus text format otherwise.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{EnableOpenMetrics: true, ErrorHandling: promhttp.ContinueOnError})
}

// Registry returns the registry, for tests that gather without HTTP.
func (m *Metrics) Registry() *prometheus.Registry {
	return m.registry
}

// Launch records the end of a launch: its result and, when it succeeded, how long it took.
func (m *Metrics) Launch(project string, deployment string, shape string, result string, took time.Duration) {
	if m == nil {
		return
	}

	m.launches.WithLabelValues(project, deployment, shape, result).Inc()
	if result == ResultOK {
		m.launchDuration.WithLabelValues(project, deployment, shape).Observe(took.Seconds())
	}
}

// Delete records the end of a delete, as Launch does.
func (m *Metrics) Delete(project string, deployment string, shape string, result string, took time.Duration) {
	if m == nil {
		return
	}

	m.deletes.WithLabelValues(project, deployment, shape, result).Inc()
	if result == ResultOK {
		m.deleteDuration.WithLabelValues(project, deployment, shape).Observe(took.Seconds())
	}
}

// ScaleRequest counts a scale request queued for a shape's governor.
func (m *Metrics) ScaleRequest(project string, deployment string, shape string) {
	if m == nil {
		return
	}

	m.scaleRequests.WithLabelValues(project, deployment, shape).Inc()
}

// APIRequest records one answered request under its route template (never the raw path,
// which holds names) and its method folded by Method (never the method as sent).
func (m *Metrics) APIRequest(route string, method string, code int, took time.Duration) {
	if m == nil {
		return
	}

	method = Method(method)
	m.apiRequests.WithLabelValues(route, method, strconv.Itoa(code)).Inc()
	m.apiDuration.WithLabelValues(route, method).Observe(took.Seconds())
}

// LXDCall records one call to LXD.
func (m *Metrics) LXDCall(kind string, took time.Duration, err error) {
	if m == nil {
		return
	}

	m.lxdCalls.WithLabelValues(kind, okOrError(err)).Inc()
	m.lxdDuration.WithLabelValues(kind).Observe(took.Seconds())
}

// WebhookAttempt records one delivery attempt.
func (m *Metrics) WebhookAttempt(project string, deployment string, took time.Duration, err error) {
	if m == nil {
		return
	}

	m.webhookAttempts.WithLabelValues(project, deployment, okOrError(err)).Inc()
	m.webhookDuration.WithLabelValues(project, deployment).Observe(took.Seconds())
}

// TemplateExpansion records the time one templated config took to expand.
func (m *Metrics) TemplateExpansion(took time.Duration) {
	if m == nil {
		return
	}

	m.templateExpansion.Observe(took.Seconds())
}

// Results of an autohealing replacement.
const (
	ReplacementOK     = "ok"
	ReplacementFailed = "failed"
	ReplacementGaveUp = "gave_up"
)

// Replacement counts the end of a replacement autohealing started.
func (m *Metrics) Replacement(project string, deployment string, shape string, result string) {
	if m == nil {
		return
	}

	m.replacements.WithLabelValues(project, deployment, shape, result).Inc()
}

// Resize counts one instance a resize reached, by result (applied, refused, failed).
func (m *Metrics) Resize(project string, deployment string, shape string, result string) {
	if m == nil {
		return
	}

	m.resizes.WithLabelValues(project, deployment, shape, result).Inc()
}

// RolloutFinished counts a rollout that reached a final status.
func (m *Metrics) RolloutFinished(project string, deployment string, shape string, status string) {
	if m == nil {
		return
	}

	m.rolloutsEnded.WithLabelValues(project, deployment, shape, status).Inc()
}

// HookWaitEnded counts a lifecycle hook wait that ended with action; timedOut says the
// shape's default_action ended it rather than a posted action.
func (m *Metrics) HookWaitEnded(project string, deployment string, shape string, hook string, action string, timedOut bool) {
	if m == nil {
		return
	}

	by := "request"
	if timedOut {
		by = "timeout"
	}

	m.hookWaitsEnded.WithLabelValues(project, deployment, shape, hook, action, by).Inc()
}

func okOrError(err error) string {
	if err != nil {
		return "error"
	}

	return "ok"
}
