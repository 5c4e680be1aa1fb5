package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrapeTimeout bounds what one scrape may wait for the database and dqlite.
const scrapeTimeout = 5 * time.Second

// deliveryStatuses are reported for every deployment that has deliveries, zeros included,
// so that a rule on status="failed" sees the series before the first failure.
var deliveryStatuses = []string{"pending", "delivered", "failed"}

// stateCollector reads the values that are state rather than events at scrape time: one
// database snapshot for the shape and delivery gauges, and in-memory values for the rest.
// It never calls LXD: reachability is the last probe's answer.
type stateCollector struct {
	sources Sources

	shapeCurrent *prometheus.Desc
	shapeMinimum *prometheus.Desc
	shapeMaximum *prometheus.Desc
	deliveries   *prometheus.Desc
	lxdReachable *prometheus.Desc
	operations   *prometheus.Desc
	leader       *prometheus.Desc
	members      *prometheus.Desc
	retries      *prometheus.Desc
}

func newStateCollector(sources Sources) *stateCollector {
	desc := func(name string, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(prometheus.BuildFQName(namespace, "", name), help, labels, nil)
	}

	return &stateCollector{
		sources:      sources,
		shapeCurrent: desc("shape_instances", "Instances a shape counts now (creating and created; not deleting, not missing).", shapeLabels...),
		shapeMinimum: desc("shape_instances_minimum", "A shape's scaling_minimum.", shapeLabels...),
		shapeMaximum: desc("shape_instances_maximum", "A shape's scaling_maximum.", shapeLabels...),
		deliveries:   desc("webhook_deliveries", "Webhook deliveries by status (pending, delivered, failed); finished ones are kept 7 days.", "project", "deployment", "status"),
		lxdReachable: desc("lxd_reachable", "1 when LXD answered the last probe, 0 otherwise."),
		operations:   desc("operations_running", "Background operations running on this member."),
		leader:       desc("dqlite_leader", "1 when this member is the dqlite leader."),
		members:      desc("dqlite_members", "Members of the dqlite cluster, as the leader knows them."),
		retries:      desc("dqlite_transaction_retries_total", "Database transactions retried after a busy or leadership error."),
	}
}

// Describe implements prometheus.Collector.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.shapeCurrent, c.shapeMinimum, c.shapeMaximum, c.deliveries, c.lxdReachable, c.operations, c.leader, c.members, c.retries} {
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
			ch <- prometheus.NewInvalidMetric(c.shapeCurrent, err)
		} else {
			c.collectSnapshot(snap, gauge)
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

func (c *stateCollector) collectSnapshot(snap Snapshot, gauge func(*prometheus.Desc, float64, ...string)) {
	for _, s := range snap.Shapes {
		gauge(c.shapeCurrent, float64(s.Current), s.Project, s.Deployment, s.Shape)
		gauge(c.shapeMinimum, float64(s.Minimum), s.Project, s.Deployment, s.Shape)
		gauge(c.shapeMaximum, float64(s.Maximum), s.Project, s.Deployment, s.Shape)
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

func boolValue(b bool) float64 {
	if b {
		return 1
	}

	return 0
}
