package metrics

import (
	"context"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"google.golang.org/protobuf/proto"
)

// scrapeTimeout bounds what one scrape may wait for the database and dqlite.
const scrapeTimeout = 5 * time.Second

// deliveryStatuses are reported for every deployment that has deliveries, zeros included,
// so that a rule on status="failed" sees the series before the first failure.
var deliveryStatuses = []string{"pending", "delivered", "failed"}

// shapeGauge is one per-shape gauge read from a ShapeStat.
type shapeGauge struct {
	desc  *prometheus.Desc
	value func(s ShapeStat) int
	when  func(s ShapeStat) bool
}

// shapeGauges are the per-shape gauges without a label of their own. The first ones are
// reported for every shape, zeros included, so that a rule comparing two of them sees every
// shape; those with a when only for the shapes that use the feature (at most 1,000 shapes
// times a few series: a scrape stays cheap).
var shapeGauges = []struct {
	name  string
	help  string
	value func(s ShapeStat) int
	when  func(s ShapeStat) bool
}{
	{"shape_instances", "Instances a shape counts now (creating and created; not deleting, not missing).", func(s ShapeStat) int { return s.Current }, nil},
	{"shape_instances_minimum", "A shape's scaling_minimum.", func(s ShapeStat) int { return s.Minimum }, nil},
	{"shape_instances_maximum", "A shape's scaling_maximum.", func(s ShapeStat) int { return s.Maximum }, nil},
	{"shape_instances_ready", "Instances ready: created, out of their launching:wait, and healthy when the shape has health checks.", func(s ShapeStat) int { return s.Ready }, nil},
	{"shape_instances_outdated", "Instances made from an older revision than the shape's latest (what a rollout replaces).", func(s ShapeStat) int { return s.Outdated }, nil},
	{"shape_revision", "A shape's latest revision.", func(s ShapeStat) int { return s.Revision }, nil},
	{"shape_degraded", "1 when autohealing gave up on the shape after failed replacements in a row (until the shape is updated); shapes with health checks only.", func(s ShapeStat) int { return boolInt(s.Degraded) }, func(s ShapeStat) bool { return s.HasHealthChecks || s.Degraded }},
	{"shape_autohealing_held", "1 while autohealing holds for the shape (more than health.hold_share of its instances unhealthy, a broken check, its replacement limit reached): see the shape's health_status; shapes with health checks only.", func(s ShapeStat) int { return boolInt(s.HealHeld) }, func(s ShapeStat) bool { return s.HasHealthChecks || s.HealHeld }},
	{"shape_health_check_broken", "1 while the shape's health check cannot start on any instance (a command the image lacks, a port nothing listens on); shapes with health checks only.", func(s ShapeStat) int { return boolInt(s.CheckBroken) }, func(s ShapeStat) bool { return s.HasHealthChecks || s.CheckBroken }},
	{"shape_warm_pool_ready", "Warm pool instances ready to be taken by a launch; shapes with a warm pool only.", func(s ShapeStat) int { return s.WarmPoolReady }, func(s ShapeStat) bool { return s.HasWarmPool }},
	{"shape_warm_pool_size", "The warm pool size a shape keeps (warm_pool.size); shapes with a warm pool only.", func(s ShapeStat) int { return s.WarmPoolSize }, func(s ShapeStat) bool { return s.HasWarmPool }},
}

// shapeHealths are the health label values, every one reported for every shape.
var shapeHealths = []struct {
	health string
	value  func(s ShapeStat) int
}{
	{"healthy", func(s ShapeStat) int { return s.Healthy }},
	{"unhealthy", func(s ShapeStat) int { return s.Unhealthy }},
	{"starting", func(s ShapeStat) int { return s.Starting }},
	{"unknown", func(s ShapeStat) int { return s.Unknown }},
}

// shapeHooks are the hook label values.
var shapeHooks = []struct {
	hook  string
	value func(s ShapeStat) int
}{
	{"launching:wait", func(s ShapeStat) int { return s.LaunchingWait }},
	{"terminating:wait", func(s ShapeStat) int { return s.TerminatingWait }},
}

// shapeRollouts are the active rollout status label values.
var shapeRollouts = []struct {
	status string
	value  func(s ShapeStat) int
}{
	{"running", func(s ShapeStat) int { return s.RolloutsRunning }},
	{"paused", func(s ShapeStat) int { return s.RolloutsPaused }},
}

// stateCollector reads the values that are state rather than events at scrape time: one
// database snapshot for the shape and delivery gauges, and in-memory values for the rest.
// It never calls LXD: reachability is the last probe's answer.
type stateCollector struct {
	sources Sources

	shapes          []shapeGauge
	shapeHealth     *prometheus.Desc
	shapeHooks      *prometheus.Desc
	shapeRollouts   *prometheus.Desc
	rolloutProgress *prometheus.Desc
	resourceLimit   *prometheus.Desc
	deliveries      *prometheus.Desc
	lxdReachable    *prometheus.Desc
	operations      *prometheus.Desc
	leader          *prometheus.Desc
	members         *prometheus.Desc
	retries         *prometheus.Desc
}

func newStateCollector(sources Sources) *stateCollector {
	desc := func(name string, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
	}

	shapes := make([]shapeGauge, 0, len(shapeGauges))
	for _, g := range shapeGauges {
		shapes = append(shapes, shapeGauge{desc: desc(g.name, g.help, shapeLabels...), value: g.value, when: g.when})
	}

	return &stateCollector{
		sources:         sources,
		shapes:          shapes,
		shapeHealth:     desc("shape_instances_health", "Instances of a shape by their last health verdict: healthy, unhealthy, starting, unknown (no check yet); shapes with health checks only.", append(shapeLabels, "health")...),
		shapeHooks:      desc("shape_instances_hook_waiting", "Instances waiting in a lifecycle hook: launching:wait, terminating:wait; shapes with hooks only.", append(shapeLabels, "hook")...),
		shapeRollouts:   desc("shape_rollouts", "A shape's active rollout by status: running, paused (0 or 1), while it has one.", append(shapeLabels, "status")...),
		rolloutProgress: desc("shape_rollout_progress_ratio", "Share of a shape's instances at its latest revision, while a rollout is running or paused.", shapeLabels...),
		resourceLimit:   desc("shape_resource_limit", "A shape's template limit by resource: limits.cpu (CPUs), limits.memory (bytes); shapes with resource_bounds only (what resizes move).", append(shapeLabels, "resource")...),
		deliveries:      desc("webhook_deliveries", "Webhook deliveries by status (pending, delivered, failed); finished ones are kept 7 days.", "project", "deployment", "status"),
		lxdReachable:    desc("lxd_reachable", "1 when LXD answered the last probe, 0 otherwise."),
		operations:      desc("operations_running", "Background operations running on this member."),
		leader:          desc("dqlite_leader", "1 when this member is the dqlite leader."),
		members:         desc("dqlite_members", "Members of the dqlite cluster, as the leader knows them."),
		retries:         desc("dqlite_transaction_retries_total", "Database transactions retried after a busy or leadership error."),
	}
}

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, g := range c.shapes {
		ch <- g.desc
	}

	for _, d := range []*prometheus.Desc{c.shapeHealth, c.shapeHooks, c.shapeRollouts, c.rolloutProgress, c.resourceLimit, c.deliveries, c.lxdReachable, c.operations, c.leader, c.members, c.retries} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()

	gauge := func(desc *prometheus.Desc, value float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value, labels...)
	}

	if c.sources.Snapshot != nil {
		snap, err := c.sources.Snapshot(ctx)
		if err != nil {
			// The other families are still served; the scrape reports the error.
			ch <- prometheus.NewInvalidMetric(c.shapes[0].desc, err)
		} else {
			c.collectSnapshot(snap, gauge, ch)
		}
	}

	if c.sources.LXDReachable != nil {
		gauge(c.lxdReachable, boolValue(c.sources.LXDReachable()))
	}

	if c.sources.OperationsRunning != nil {
		gauge(c.operations, float64(c.sources.OperationsRunning()))
	}

	if c.sources.Leader != nil {
		leader, err := c.sources.Leader(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.leader, err)
		} else {
			gauge(c.leader, boolValue(leader))
		}
	}

	if c.sources.Members != nil {
		members, err := c.sources.Members(ctx)
		if err != nil {
			ch <- prometheus.NewInvalidMetric(c.members, err)
		} else {
			gauge(c.members, float64(members))
		}
	}

	if c.sources.TransactionRetries != nil {
		ch <- prometheus.MustNewConstMetric(c.retries, prometheus.CounterValue, float64(c.sources.TransactionRetries()))
	}
}

func (c *stateCollector) collectSnapshot(snap Snapshot, gauge func(*prometheus.Desc, float64, ...string), ch chan<- prometheus.Metric) {
	for _, s := range snap.Shapes {
		labels := []*dto.LabelPair{labelPair("project", s.Project), labelPair("deployment", s.Deployment), labelPair("shape", s.Shape)}
		sortLabels(labels)
		shapeGauge := func(desc *prometheus.Desc, labels []*dto.LabelPair, value float64) {
			ch <- shapeMetric{desc: desc, labels: labels, value: value}
		}

		for _, g := range c.shapes {
			if g.when == nil || g.when(s) {
				shapeGauge(g.desc, labels, float64(g.value(s)))
			}
		}

		// Without health checks every instance is unknown: nothing to report.
		if s.HasHealthChecks {
			for _, h := range shapeHealths {
				shapeGauge(c.shapeHealth, withLabel(labels, "health", h.health), float64(h.value(s)))
			}
		}

		// A shape whose hooks were removed may still have instances waiting.
		if s.HasHooks || s.LaunchingWait+s.TerminatingWait > 0 {
			for _, h := range shapeHooks {
				shapeGauge(c.shapeHooks, withLabel(labels, "hook", h.hook), float64(h.value(s)))
			}
		}

		for _, resource := range sortedKeys(s.ResourceLimits) {
			shapeGauge(c.resourceLimit, withLabel(labels, "resource", resource), s.ResourceLimits[resource])
		}

		// Rollout series exist while a rollout is running or paused (both statuses then,
		// so a pause shows as running 0, paused 1).
		if s.RolloutsRunning+s.RolloutsPaused > 0 {
			for _, r := range shapeRollouts {
				shapeGauge(c.shapeRollouts, withLabel(labels, "status", r.status), float64(r.value(s)))
			}

			progress := 1.0
			if s.Current > 0 {
				progress = float64(s.Current-s.Outdated) / float64(s.Current)
			}

			shapeGauge(c.rolloutProgress, labels, progress)
		}
	}

	type deploymentKey struct{ project, deployment string }
	counts := map[deploymentKey]map[string]int{}
	for _, d := range snap.Deliveries {
		key := deploymentKey{d.Project, d.Deployment}
		if counts[key] == nil {
			counts[key] = map[string]int{}
		}

		counts[key][d.Status] += d.Count
	}

	for key, byStatus := range counts {
		for _, status := range deliveryStatuses {
			gauge(c.deliveries, float64(byStatus[status]), key.project, key.deployment, status)
		}
	}
}

// sortedKeys returns a map's keys in order, so that a scrape reads the same each time.
func sortedKeys(m map[string]float64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}

	sort.Strings(keys)
	return keys
}

func boolInt(b bool) int {
	if b {
		return 1
	}

	return 0
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}

	return 0
}

// shapeMetric is one gauge of a shape. Its label pairs are made once per shape and shared
// by the shape's gauges: a scrape of 1,000 shapes has thousands of series, and making every
// series' labels again (prometheus.MustNewConstMetric) was half of the scrape's time.
type shapeMetric struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair // sorted by name, as the registry expects; never modified
	value  float64
}

// Desc implements prometheus.Metric.
func (m shapeMetric) Desc() *prometheus.Desc {
	return m.desc
}

// Write implements prometheus.Metric.
func (m shapeMetric) Write(out *dto.Metric) error {
	out.Label = m.labels
	out.Gauge = &dto.Gauge{Value: proto.Float64(m.value)}
	return nil
}

func labelPair(name string, value string) *dto.LabelPair {
	return &dto.LabelPair{Name: proto.String(name), Value: proto.String(value)}
}

func sortLabels(labels []*dto.LabelPair) {
	sort.Slice(labels, func(i, j int) bool { return labels[i].GetName() < labels[j].GetName() })
}

// withLabel returns a new sorted slice of labels with one more pair (labels stays as is).
func withLabel(labels []*dto.LabelPair, name string, value string) []*dto.LabelPair {
	out := make([]*dto.LabelPair, 0, len(labels)+1)
	out = append(out, labels...)
	out = append(out, labelPair(name, value))
	sortLabels(out)
	return out
}
