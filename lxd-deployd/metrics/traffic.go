package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// TrafficStat is what the front door measured for one shape and, with Instance set, one of
// its instances (doc/traffic.md).
type TrafficStat struct {
	Project    string
	Deployment string
	Shape      string
	// Instance is empty for the shape's totals.
	Instance string

	RequestRate         float64
	Sessions            int
	Queue               int
	ResponseTimeSeconds float64
}

// trafficCollector reports the front door's figures at scrape time, from the doorkeeper's
// last reading (no call to the load balancer during a scrape).
type trafficCollector struct {
	source func() []TrafficStat

	shapeRate, shapeSessions, shapeQueue, shapeResponse         *prometheus.Desc
	instanceRate, instanceSessions, instanceQueue, instanceResp *prometheus.Desc
}

func newTrafficCollector(source func() []TrafficStat) *trafficCollector {
	name := func(n string) string { return prometheus.BuildFQName(namespace, "", n) }
	instanceLabels := append(append([]string{}, shapeLabels...), "instance")
	return &trafficCollector{
		source:           source,
		shapeRate:        prometheus.NewDesc(name("shape_traffic_request_rate"), "Requests (http) or connections (tcp) per second through a shape's front door, over the last second.", shapeLabels, nil),
		shapeSessions:    prometheus.NewDesc(name("shape_traffic_sessions"), "Connections open through a shape's front door now.", shapeLabels, nil),
		shapeQueue:       prometheus.NewDesc(name("shape_traffic_queue"), "Requests waiting in a shape's front door for an instance.", shapeLabels, nil),
		shapeResponse:    prometheus.NewDesc(name("shape_traffic_response_time_seconds"), "Average response time of a shape's instances over the last 1024 requests.", shapeLabels, nil),
		instanceRate:     prometheus.NewDesc(name("instance_traffic_request_rate"), "Requests (http) or connections (tcp) per second the front door sent an instance, over the last second.", instanceLabels, nil),
		instanceSessions: prometheus.NewDesc(name("instance_traffic_sessions"), "Connections open to an instance through the front door now (a drain waits for 0).", instanceLabels, nil),
		instanceQueue:    prometheus.NewDesc(name("instance_traffic_queue"), "Requests waiting in the front door for this instance.", instanceLabels, nil),
		instanceResp:     prometheus.NewDesc(name("instance_traffic_response_time_seconds"), "Average response time of an instance over its last 1024 requests.", instanceLabels, nil),
	}
}

// Describe implements prometheus.Collector.
func (c *trafficCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.shapeRate, c.shapeSessions, c.shapeQueue, c.shapeResponse, c.instanceRate, c.instanceSessions, c.instanceQueue, c.instanceResp} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *trafficCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.source() {
		rate, sessions, queue, resp := c.shapeRate, c.shapeSessions, c.shapeQueue, c.shapeResponse
		labels := []string{s.Project, s.Deployment, s.Shape}
		if s.Instance != "" {
			rate, sessions, queue, resp = c.instanceRate, c.instanceSessions, c.instanceQueue, c.instanceResp
			labels = append(labels, s.Instance)
		}

		ch <- prometheus.MustNewConstMetric(rate, prometheus.GaugeValue, s.RequestRate, labels...)
		ch <- prometheus.MustNewConstMetric(sessions, prometheus.GaugeValue, float64(s.Sessions), labels...)
		ch <- prometheus.MustNewConstMetric(queue, prometheus.GaugeValue, float64(s.Queue), labels...)
		ch <- prometheus.MustNewConstMetric(resp, prometheus.GaugeValue, s.ResponseTimeSeconds, labels...)
	}
}
