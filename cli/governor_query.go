package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/policy"
	"github.com/lxd-deployd/lxd-deployd/shared/prometheus"
)

// Target tracking on Prometheus queries: no webhook brings these values, so the governor
// asks Prometheus itself, every --query-interval, for each shape whose policy has a query,
// and queues the value to the shape's worker like an event (doc/governors.md).

// governorQueryTimeout bounds one query; Prometheus is told too, so it stops working on it.
const governorQueryTimeout = 10 * time.Second

// querier runs an instant query and returns its one number (shared/prometheus, or a fake in
// tests); prometheus.ErrNoData when it matched nothing.
type querier interface {
	Query(ctx context.Context, query string) (float64, error)
}

// queryShapes returns the query of each shape the policy gives one, and checks that there
// is a Prometheus to ask them.
func queryShapes(p *policy.Policy, prometheusURL string, interval time.Duration) (map[string]string, error) {
	queries := map[string]string{}
	for _, name := range p.Names() {
		s := p.Shape(name)
		if s.Query != "" {
			queries[name] = s.Query
			if prometheusURL == "" {
				return nil, fmt.Errorf("shape %s has a query: give --prometheus-url (the Prometheus server to ask, as in http://127.0.0.1:9090)", name)
			}
		}
	}

	if len(queries) > 0 && interval <= 0 {
		return nil, fmt.Errorf("--query-interval must be positive, got %s", interval)
	}

	return queries, nil
}

// pollQueries queries Prometheus for every shape in queries now and then every interval,
// until ctx ends. It counts as work of the governor: wait returns once it has stopped.
func (g *governor) pollQueries(ctx context.Context, q querier, queries map[string]string, interval time.Duration) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for {
			g.queryOnce(ctx, q, queries)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
}

// queryOnce runs each shape's query and queues its value to the shape's worker. A query that
// fails or returns no data changes nothing: it is logged, and no decision is made (nor
// remembered by the stabilization window).
func (g *governor) queryOnce(ctx context.Context, q querier, queries map[string]string) {
	// In the same order each time.
	for _, name := range slices.Sorted(maps.Keys(queries)) {
		if ctx.Err() != nil {
			return
		}

		query := queries[name]
		at := g.now()
		value, err := q.Query(ctx, query)
		event := "query@" + at.UTC().Format(time.RFC3339)
		if err != nil {
			msg := "query failed: no change"
			if errors.Is(err, prometheus.ErrNoData) {
				msg = "query returned no data: no change"
			}

			if ctx.Err() == nil {
				g.log.Warn(msg, "shape", name, "event", event, "trigger", string(policy.Query), "query", query, "err", err)
			}

			continue
		}

		g.log.Debug("query", "shape", name, "event", event, "query", query, "value", value)
		g.enqueue(name, governorJob{event: event, shape: name, kind: policy.Query, value: value})
	}
}

// queryInput reads the shape's size and bounds now and makes the input of a query's value.
func (g *governor) queryInput(ctx context.Context, log *slog.Logger, shape string, j governorJob) (policy.Input, bool) {
	s, err := g.scaler.Shape(ctx, shape)
	if err != nil {
		log.Error("cannot read the shape, query value dropped", "err", err)
		return policy.Input{}, false
	}

	return policy.QueryInput(j.value, s.ScalingCurrent, s.ScalingMinimum, s.ScalingMaximum), true
}
