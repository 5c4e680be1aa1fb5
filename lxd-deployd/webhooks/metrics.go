package webhooks

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/expfmt"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Sample is what LXD's /1.0/metrics says of one running instance.
type Sample struct {
	CPUSeconds  float64
	MemoryUsed  int64
	MemoryTotal int64
}

// ParseLXDMetrics reads LXD's OpenMetrics text into samples keyed by "project/name".
func ParseLXDMetrics(text string) (map[string]Sample, error) {
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return nil, fmt.Errorf("parse LXD metrics: %w", err)
	}

	samples := map[string]Sample{}
	memory := map[string]map[string]float64{}
	for name, family := range families {
		for _, metric := range family.GetMetric() {
			labels := map[string]string{}
			for _, label := range metric.GetLabel() {
				labels[label.GetName()] = label.GetValue()
			}

			key := labels["project"] + "/" + labels["name"]
			if labels["name"] == "" {
				continue
			}

			switch name {
			case "lxd_cpu_seconds_total":
				s := samples[key]
				s.CPUSeconds += metric.GetCounter().GetValue()
				samples[key] = s
			case "lxd_memory_MemTotal_bytes", "lxd_memory_MemAvailable_bytes":
				if memory[key] == nil {
					memory[key] = map[string]float64{}
				}

				memory[key][name] = metric.GetGauge().GetValue()
			}
		}
	}

	for key, values := range memory {
		s := samples[key]
		s.MemoryTotal = int64(values["lxd_memory_MemTotal_bytes"])
		s.MemoryUsed = int64(values["lxd_memory_MemTotal_bytes"] - values["lxd_memory_MemAvailable_bytes"])
		samples[key] = s
	}

	return samples, nil
}

// Collector sends each deployment a metrics event every webhook.metrics_interval, from one
// /1.0/metrics call per round whatever the number of instances: LXD answers that in about
// 20 ms where per-instance state calls take hundreds.
type Collector struct {
	db         *db.Cluster
	lxd        *backend.LXD
	dispatcher *Dispatcher
	logger     *slog.Logger

	mu          sync.Mutex
	lastSent    map[int64]time.Time
	previous    map[string]timedSample
	refreshedAt time.Time
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
func NewCollector(cluster *db.Cluster, lxd *backend.LXD, dispatcher *Dispatcher, logger *slog.Logger) *Collector {
	return &Collector{db: cluster, lxd: lxd, dispatcher: dispatcher, logger: logger, lastSent: map[int64]time.Time{}, previous: map[string]timedSample{}}
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

	client, err := c.lxd.Client()
	if err != nil {
		return err
	}

	text, err := client.GetMetrics()
	if err != nil {
		return err
	}

	samples, err := ParseLXDMetrics(text)
	if err != nil {
		return err
	}

	c.mu.Lock()
	c.updateRates(samples, now)
	events := make(map[int64]api.WebhookMetricsMetadata, len(due))
	for _, d := range due {
		events[d.ID] = c.metadata(d, instances[d.ID], samples)
		c.lastSent[d.ID] = now
	}

	c.mu.Unlock()
	var errs []error
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

// updateRates records the new readings; the caller holds c.mu. LXD refreshes every
// instance's reading at once, so a round where no reading moved (within the cache time) is
// LXD's cache speaking and is skipped, while in a round where some moved, or after the cache
// time, an unmoved one is an idle instance.
func (c *Collector) updateRates(samples map[string]Sample, now time.Time) {
	refreshed := now.Sub(c.refreshedAt) >= lxdMetricsCache
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

	c.refreshedAt = now
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
		if _, ok := samples[key]; !ok {
			delete(c.previous, key) // stopped or deleted
		}
	}
}

// metadata builds one deployment's metrics event; the caller holds c.mu.
func (c *Collector) metadata(d db.Deployment, rows []db.Instance, samples map[string]Sample) api.WebhookMetricsMetadata {
	metadata := api.WebhookMetricsMetadata{
		IntervalSeconds: ConfigFrom(d.Config).MetricsInterval.Seconds(),
		Shapes:          map[string]api.WebhookShapeMetrics{},
	}

	for name, shape := range d.DeploymentShapes {
		metadata.Shapes[name] = api.WebhookShapeMetrics{
			ScalingCurrent: shape.ScalingCurrent,
			ScalingMinimum: shape.ScalingMinimum,
			ScalingMaximum: shape.ScalingMaximum,
			Instances:      map[string]api.WebhookInstanceMetrics{},
		}
	}

	for _, row := range rows {
		shape, ok := metadata.Shapes[row.Shape]
		if !ok || row.State == db.InstanceDeleting {
			continue
		}

		key := row.Project + "/" + row.Name
		sample, running := samples[key]
		instance := api.WebhookInstanceMetrics{Status: "Stopped", Health: row.Health.Status, CPUSeconds: sample.CPUSeconds, MemoryUsageBytes: sample.MemoryUsed, MemoryLimitBytes: sample.MemoryTotal}
		if running {
			instance.Status = "Running"
			instance.CPURate = c.previous[key].rate
		}

		shape.Instances[row.Name] = instance
	}

	return metadata
}
