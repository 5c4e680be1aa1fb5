package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Sample is what LXD's /1.0/metrics says of one running instance.
type Sample struct {
	CPUSeconds  float64
	MemoryUsed  int64
	MemoryTotal int64
}

// ParseLXDMetrics reads LXD's OpenMetrics text into samples keyed by "project/name". It
// reads only the three families it keeps, line by line: with 1,000 instances LXD's answer
// is megabytes (a hundred lines an instance), and a full OpenMetrics parse of it took
// longer than LXD's own instance listing, once per listing of a shape (issue 20). Every
// other sample line is checked for its shape (name, labels, a number), so that what is not
// OpenMetrics text is still an error.
func ParseLXDMetrics(text string) (map[string]Sample, error) {
	samples := map[string]Sample{}
	type memory struct{ total, available float64 }
	memories := map[string]memory{}
	for number := 1; text != ""; number++ {
		var line string
		line, text, _ = strings.Cut(text, "\n")
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}

		name, labels, value, ok := splitMetricLine(line)
		if !ok {
			return nil, fmt.Errorf("parse LXD metrics: line %d is not a sample: %.80q", number, line)
		}

		if name != "lxd_cpu_seconds_total" && name != "lxd_memory_MemTotal_bytes" && name != "lxd_memory_MemAvailable_bytes" {
			continue
		}

		project, instance, ok := metricInstance(labels)
		if !ok {
			return nil, fmt.Errorf("parse LXD metrics: line %d has malformed labels: %.80q", number, line)
		}

		if instance == "" {
			continue
		}

		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return nil, fmt.Errorf("parse LXD metrics: line %d: %w", number, err)
		}

		key := project + "/" + instance
		switch name {
		case "lxd_cpu_seconds_total":
			s := samples[key]
			s.CPUSeconds += v
			samples[key] = s
		case "lxd_memory_MemTotal_bytes":
			m := memories[key]
			m.total = v
			memories[key] = m
		default:
			m := memories[key]
			m.available = v
			memories[key] = m
		}
	}

	for key, m := range memories {
		s := samples[key]
		s.MemoryTotal = int64(m.total)
		s.MemoryUsed = int64(m.total - m.available)
		samples[key] = s
	}

	return samples, nil
}

// splitMetricLine splits a sample line, name{labels} value [timestamp], without looking
// into the labels; ok is false when the line has not that shape.
func splitMetricLine(line string) (name string, labels string, value string, ok bool) {
	i := strings.IndexAny(line, "{ \t")
	if i <= 0 {
		return "", "", "", false
	}

	name, rest := line[:i], line[i:]
	if rest[0] == '{' {
		end := labelsEnd(rest)
		if end < 0 {
			return "", "", "", false
		}

		labels, rest = rest[1:end], rest[end+1:]
	}

	rest = strings.TrimLeft(rest, " \t")
	value, _, _ = strings.Cut(rest, " ")
	if value == "" || !strings.ContainsRune("0123456789+-.NIni", rune(value[0])) {
		return "", "", "", false
	}

	return name, labels, value, true
}

// labelsEnd returns the index of the brace closing the labels that s opens, -1 if none.
func labelsEnd(s string) int {
	quoted := false
	for i := 1; i < len(s); i++ {
		switch {
		case quoted && s[i] == '\\':
			i++ // an escaped character
		case s[i] == '"':
			quoted = !quoted
		case !quoted && s[i] == '}':
			return i
		}
	}

	return -1
}

// unescapeLabel undoes the escapes OpenMetrics allows in a label value (backslash, quote, newline).
func unescapeLabel(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == 'n' {
				b.WriteByte('\n')
				continue
			}
		}

		b.WriteByte(s[i])
	}

	return b.String()
}

// metricInstance reads the project and name labels of a sample (label="value" pairs,
// values escaped as OpenMetrics has them).
func metricInstance(labels string) (project string, name string, ok bool) {
	for labels != "" {
		key, rest, found := strings.Cut(labels, "=")
		if !found || len(rest) < 2 || rest[0] != '"' {
			return "", "", false
		}

		key = strings.TrimSpace(key)
		end := -1
		escaped := false
		for i := 1; i < len(rest) && end < 0; i++ {
			switch rest[i] {
			case '\\':
				escaped = true
				i++
			case '"':
				end = i
			}
		}

		if end < 0 {
			return "", "", false
		}

		value := rest[1:end]
		if escaped && (key == "project" || key == "name") {
			value = unescapeLabel(value)
		}

		switch key {
		case "project":
			project = value
		case "name":
			name = value
		}

		labels = strings.TrimLeft(rest[end+1:], " ")
		labels = strings.TrimPrefix(labels, ",")
	}

	return project, name, true
}

// Collector sends each deployment a metrics event every webhook.metrics_interval, from the
// observed usage of LXD (UsageSource): one /1.0/metrics read per project whatever the number
// of instances, shared with the shape listings (LXD answers it in about 20 ms where
// per-instance state calls take hundreds).
type Collector struct {
	db         *db.Cluster
	usage      UsageSource
	dispatcher *Dispatcher
	logger     *slog.Logger

	// traffic returns the front door's last figures by frontdoor key (nil: none).
	traffic func() map[string]frontdoor.FrontendStats

	mu       sync.Mutex
	lastSent map[int64]time.Time
	previous map[string]timedSample

	// refreshedAt is when each project's readings last moved (LXD caches each project's
	// metrics apart).
	refreshedAt map[string]time.Time
}

// UsageSource is the observed usage of a project's running instances by name
// (observed.Snapshot.Usage): as fresh as LXD's own metrics cache, and an error (never an
// empty answer) when LXD gave none, so that no instance is reported stopped for an LXD
// that did not answer.
type UsageSource interface {
	Usage(project string) (map[string]api.DeploymentInstanceUsage, error)
}

// timedSample is the last distinct CPU reading of an instance. LXD caches /1.0/metrics for
// several seconds, so a reading that did not change says nothing about the last second: the
// rate is computed between distinct readings and carried over in between.
type timedSample struct {
	Sample
	at   time.Time
	rate *float64
}

// NewCollector returns a metrics collector.
func NewCollector(cluster *db.Cluster, usage UsageSource, dispatcher *Dispatcher, logger *slog.Logger) *Collector {
	return &Collector{db: cluster, usage: usage, dispatcher: dispatcher, logger: logger, lastSent: map[int64]time.Time{}, previous: map[string]timedSample{}}
}

// Run collects until ctx ends, checking every tick which deployments are due.
func (c *Collector) Run(ctx context.Context, tick time.Duration) {
	c.RunFenced(ctx, tick, nil)
}

// RunFenced is Run for the holder of a lease: fence runs in the transaction queueing each
// metrics event and refuses it once the lease is lost (lease.Check), so that a member
// paused past its lease cannot send a round the new holder sends too.
func (c *Collector) RunFenced(ctx context.Context, tick time.Duration, fence func(ctx context.Context, tx *sql.Tx) error) {
	for {
		err := c.collect(ctx, time.Now(), fence)
		if err != nil && ctx.Err() == nil {
			c.logger.Debug("metrics round skipped", "err", err)
		}

		select {
		case <-ctx.Done():
			return
		case <-time.After(tick):
		}
	}
}

// Collect makes one round now, as Run does every tick (BenchmarkLoopsAtRest prices it).
func (c *Collector) Collect(ctx context.Context, now time.Time) error {
	return c.collect(ctx, now, nil)
}

// collect sends metrics to the deployments that are due. In a cluster, Run runs on the
// one member holding the metrics lease, so that a governor gets one metrics event per
// interval whatever the number of members.
func (c *Collector) collect(ctx context.Context, now time.Time, fence func(ctx context.Context, tx *sql.Tx) error) error {
	var due []db.Deployment
	instances := map[int64][]db.Instance{}
	err := c.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		due = nil
		// Every tick reads the deployments' own rows only; their shapes and instances only
		// once one is due (reading every instance each second was 3% of the daemon's CPU
		// at rest with 1,000 instances, issue 20).
		deployments, err := db.GetDeploymentRows(ctx, tx)
		if err != nil {
			return err
		}

		c.mu.Lock()
		for _, d := range deployments {
			interval := ConfigFrom(d.Config).MetricsInterval
			if d.GovernorWebhookURL == "" || interval <= 0 || now.Sub(c.lastSent[d.ID]) < interval {
				continue
			}

			due = append(due, d)
		}

		c.mu.Unlock()
		for i, d := range due {
			full, err := db.GetDeployment(ctx, tx, d.Project, d.Name)
			if err != nil {
				return err
			}

			due[i] = *full
			instances[d.ID], err = db.GetInstances(ctx, tx, db.InstanceFilter{DeploymentID: d.ID})
			if err != nil {
				return err
			}
		}

		return nil
	})
	if err != nil || len(due) == 0 {
		return err
	}

	// Each due project's usage, from the observed snapshot. A project whose usage LXD did
	// not give has no event this round (its deployments stay due): an LXD that did not
	// answer must not read as instances that stopped.
	var errs []error
	samples := map[string]map[string]Sample{}
	for _, d := range due {
		if _, ok := samples[d.Project]; ok {
			continue
		}

		usage, err := c.usage.Usage(d.Project)
		if err != nil {
			errs = append(errs, fmt.Errorf("usage of project %q: %w", d.Project, err))
			continue
		}

		project := make(map[string]Sample, len(usage))
		for name, u := range usage {
			project[d.Project+"/"+name] = Sample{CPUSeconds: u.CPUSeconds, MemoryUsed: u.MemoryUsageBytes, MemoryTotal: u.MemoryLimitBytes}
		}

		samples[d.Project] = project
	}

	c.mu.Lock()
	for project, read := range samples {
		c.updateProjectRates(project, read, now)
	}

	events := make(map[int64]api.WebhookMetricsMetadata, len(due))
	for _, d := range due {
		read, ok := samples[d.Project]
		if !ok {
			continue
		}

		events[d.ID] = c.metadata(d, instances[d.ID], read)
		c.lastSent[d.ID] = now
	}

	c.mu.Unlock()
	for id, metadata := range events {
		err := c.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			if fence != nil {
				err := fence(ctx, tx)
				if err != nil {
					return err
				}
			}

			_, err := Enqueue(ctx, tx, id, api.WebhookMetrics, metadata, now)
			return err
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("queue metrics event: %w", err))
		}
	}

	if len(events) > 0 {
		c.dispatcher.Poke()
	}

	return errors.Join(errs...)
}

// lxdMetricsCache is the longest LXD caches /1.0/metrics (8s in 5.0, 15s in some
// releases): readings older than that are fresh even if they did not move.
const lxdMetricsCache = 15 * time.Second

// updateRates records the new readings, keyed "project/name", of the projects they name;
// the caller holds c.mu.
func (c *Collector) updateRates(samples map[string]Sample, now time.Time) {
	byProject := map[string]map[string]Sample{}
	for key, sample := range samples {
		project, _, _ := strings.Cut(key, "/")
		if byProject[project] == nil {
			byProject[project] = map[string]Sample{}
		}

		byProject[project][key] = sample
	}

	for project, read := range byProject {
		c.updateProjectRates(project, read, now)
	}
}

// updateProjectRates records a project's new readings (all of its running instances,
// keyed "project/name"); the caller holds c.mu. LXD refreshes every instance's reading of
// a project at once, so a round where no reading moved (within the cache time) is LXD's
// cache speaking and is skipped, while in a round where some moved, or after the cache
// time, an unmoved one is an idle instance.
func (c *Collector) updateProjectRates(project string, samples map[string]Sample, now time.Time) {
	if c.refreshedAt == nil {
		c.refreshedAt = map[string]time.Time{}
	}

	refreshed := now.Sub(c.refreshedAt[project]) >= lxdMetricsCache
	for key, sample := range samples {
		previous, seen := c.previous[key]
		if !seen || previous.CPUSeconds != sample.CPUSeconds {
			refreshed = true
			break
		}
	}

	if !refreshed {
		return
	}

	c.refreshedAt[project] = now
	for key, sample := range samples {
		next := timedSample{Sample: sample, at: now}
		previous, seen := c.previous[key]
		elapsed := now.Sub(previous.at).Seconds()
		if seen && elapsed > 0 && sample.CPUSeconds >= previous.CPUSeconds {
			rate := (sample.CPUSeconds - previous.CPUSeconds) / elapsed
			next.rate = &rate
		}

		c.previous[key] = next
	}

	for key := range c.previous {
		keyProject, _, _ := strings.Cut(key, "/")
		if _, ok := samples[key]; !ok && keyProject == project {
			delete(c.previous, key) // stopped or deleted
		}
	}
}

// WithTraffic has the metrics events carry the front door's figures per shape and
// instance (doc/traffic.md); call it where the collector is built.
func (c *Collector) WithTraffic(traffic func() map[string]frontdoor.FrontendStats) *Collector {
	c.traffic = traffic
	return c
}

// trafficMetrics is one door figure set as a metrics event carries it.
func trafficMetrics(rate float64, sessions int, queue int, response time.Duration) *api.WebhookTrafficMetrics {
	return &api.WebhookTrafficMetrics{RequestRate: rate, Sessions: sessions, Queue: queue, ResponseTimeSeconds: response.Seconds()}
}

// metadata builds one deployment's metrics event; the caller holds c.mu.
func (c *Collector) metadata(d db.Deployment, rows []db.Instance, samples map[string]Sample) api.WebhookMetricsMetadata {
	metadata := api.WebhookMetricsMetadata{
		IntervalSeconds: ConfigFrom(d.Config).MetricsInterval.Seconds(),
		Shapes:          map[string]api.WebhookShapeMetrics{},
	}

	var traffic map[string]frontdoor.FrontendStats
	if c.traffic != nil {
		traffic = c.traffic()
	}

	for name, shape := range d.DeploymentShapes {
		m := api.WebhookShapeMetrics{
			ScalingCurrent: shape.ScalingCurrent,
			ScalingMinimum: shape.ScalingMinimum,
			ScalingMaximum: shape.ScalingMaximum,
			Instances:      map[string]api.WebhookInstanceMetrics{},
		}

		if t, ok := traffic[frontdoor.Key(d.Project, d.Name, name)]; ok {
			m.Traffic = trafficMetrics(t.RequestRate, t.Sessions, t.Queue, t.ResponseTime)
		}

		metadata.Shapes[name] = m
	}

	for _, row := range rows {
		// The instances scaling_current counts, and no others: a governor adding up the
		// instances must get the size the bounds hold (replaced and missing ones left out).
		shape, ok := metadata.Shapes[row.Shape]
		if !ok || !shapes.Counted(row) {
			continue
		}

		key := row.Project + "/" + row.Name
		sample, running := samples[key]
		instance := api.WebhookInstanceMetrics{Status: "Stopped", Health: row.Health.Status, CPUSeconds: sample.CPUSeconds, MemoryUsageBytes: sample.MemoryUsed, MemoryLimitBytes: sample.MemoryTotal}
		if running {
			instance.Status = "Running"
			instance.CPURate = c.previous[key].rate
		}

		if t, ok := traffic[frontdoor.Key(d.Project, d.Name, row.Shape)].Servers[row.Name]; ok {
			instance.Traffic = trafficMetrics(t.RequestRate, t.Sessions, t.Queue, t.ResponseTime)
		}

		shape.Instances[row.Name] = instance
	}

	return metadata
}
