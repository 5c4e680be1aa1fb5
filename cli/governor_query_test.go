package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/policy"
	"github.com/lxd-deployd/lxd-deployd/shared/prometheus"
)

// answers is a querier answering each query from a table the test changes (the client of a
// real Prometheus is tested in shared/prometheus and end to end).
type answers struct {
	mu     sync.Mutex
	values map[string]float64
	errs   map[string]error
	asked  []string
}

func (a *answers) Query(ctx context.Context, query string) (float64, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, query)
	if err := a.errs[query]; err != nil {
		return 0, err
	}

	return a.values[query], nil
}

func (a *answers) set(query string, value float64, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.values[query], a.errs[query] = value, err
}

const webQuery = `sum(rate(http_requests_total{shape="web"}[1m]))`

func governorQueryPolicy() *policy.Policy {
	web := policy.DefaultShape()
	web.Query = webQuery
	web.QueryTarget = 100
	web.ScaleUpCooldown = 30 * time.Second
	web.ScaleDownCooldown = time.Minute
	return &policy.Policy{Shapes: map[string]policy.Shape{"web": web, "db": policy.DefaultShape()}}
}

func TestGovernorTracksQuery(t *testing.T) {
	p := governorQueryPolicy()
	gt := newGovernorTest(t, p, false)
	gt.scaler.addShape("web", 2, 1, 5)
	gt.scaler.addShape("db", 1, 1, 3)
	queries, err := queryShapes(p, "http://127.0.0.1:9090", time.Second)
	if err != nil || len(queries) != 1 || queries["web"] != webQuery {
		t.Fatalf("queries %q, %v", queries, err)
	}

	q := &answers{values: map[string]float64{webQuery: 350}, errs: map[string]error{}}
	ctx := context.Background()

	// 350 for 100 per instance: 4 instances.
	gt.g.queryOnce(ctx, q, queries)
	gt.g.wait()
	gt.wantOps("launch web/web-*", "launch web/web-*")
	gt.wantLog(`shape=web event=query@2026-11-22T19:00:00Z trigger=query current=2 desired=4 action=scale-up why="query value 350 for a target of 100 per instance (175 per instance of 2)"`)

	// A failing query, or one with no data, changes nothing and says why, even where its
	// value would have scaled down at once (no cooldown holds it: this is past the cooldown).
	gt.advance(2 * time.Minute)
	q.set(webQuery, 0, fmt.Errorf("query refused (HTTP 422, execution): many-to-many matching not allowed"))
	gt.g.queryOnce(ctx, q, queries)
	q.set(webQuery, 0, fmt.Errorf("%w: the query matched no series", prometheus.ErrNoData))
	gt.g.queryOnce(ctx, q, queries)
	gt.g.wait()
	gt.wantOps("launch web/web-*", "launch web/web-*")
	gt.wantLog(
		`level=WARN msg="query failed: no change" shape=web event=query@2026-11-22T19:02:00Z trigger=query query="sum(rate(http_requests_total{shape=\"web\"}[1m]))" err="query refused (HTTP 422, execution): many-to-many matching not allowed"`,
		`level=WARN msg="query returned no data: no change" shape=web`,
	)

	// Once it answers again, it decides again: down to the minimum.
	q.set(webQuery, 20, nil)
	gt.g.queryOnce(ctx, q, queries)
	gt.g.wait()
	gt.wantOps("launch web/web-*", "launch web/web-*", "delete web/web-*", "delete web/web-*", "delete web/web2")
	gt.wantLog(`trigger=query current=4 desired=1 action=scale-down why="query value 20 for a target of 100 per instance (5 per instance of 4)"`)

	// Only shapes with a query are asked.
	if strings.Join(q.asked, ",") != strings.Repeat(webQuery+",", 3)+webQuery {
		t.Errorf("asked %q", q.asked)
	}
}

func TestGovernorQueryDryRun(t *testing.T) {
	p := governorQueryPolicy()
	gt := newGovernorTest(t, p, true)
	gt.scaler.addShape("web", 1, 1, 5)
	q := &answers{values: map[string]float64{webQuery: 900}, errs: map[string]error{}}
	gt.g.queryOnce(context.Background(), q, map[string]string{"web": webQuery})
	gt.g.wait()
	gt.wantOps()
	gt.wantLog(`trigger=query current=1 desired=5 action=scale-up why="query value 900 for a target of 100 per instance (900 per instance of 1); lowered to scaling_maximum 5" dry_run=true`)
}

// The poller asks at once, then every interval, and stops with its context; the governor's
// wait covers it.
func TestGovernorPollsQueries(t *testing.T) {
	p := governorQueryPolicy()
	gt := newGovernorTest(t, p, true)
	gt.scaler.addShape("web", 1, 1, 5)
	q := &answers{values: map[string]float64{webQuery: 100}, errs: map[string]error{}}
	ctx, cancel := context.WithCancel(context.Background())
	gt.g.pollQueries(ctx, q, map[string]string{"web": webQuery}, 10*time.Millisecond)
	deadline := time.Now().Add(10 * time.Second)
	for {
		q.mu.Lock()
		n := len(q.asked)
		q.mu.Unlock()
		if n >= 3 {
			break
		}

		if time.Now().After(deadline) {
			t.Fatalf("asked %d times in 10s", n)
		}

		time.Sleep(10 * time.Millisecond)
	}

	cancel()
	gt.g.wait()
	gt.wantLog(`trigger=query current=1 desired=1 action=none why="within tolerance: query value 100`)
}

func TestGovernorQueryShapes(t *testing.T) {
	p := governorQueryPolicy()
	_, err := queryShapes(p, "", time.Second)
	if err == nil || !strings.Contains(err.Error(), "shape web has a query: give --prometheus-url") {
		t.Errorf("no url: %v", err)
	}

	_, err = queryShapes(p, "http://127.0.0.1:9090", 0)
	if err == nil || !strings.Contains(err.Error(), "--query-interval must be positive") {
		t.Errorf("no interval: %v", err)
	}

	queries, err := queryShapes(governorCPUPolicy(), "", 0)
	if err != nil || len(queries) != 0 {
		t.Errorf("no query: %q %v", queries, err)
	}

	if !errors.Is(fmt.Errorf("x: %w", prometheus.ErrNoData), prometheus.ErrNoData) {
		t.Fatal("ErrNoData must wrap")
	}
}

// While a shape's worker is busy, a newer value replaces the queued one: the worker decides
// on the latest value only.
func TestGovernorQueryValuesSupersede(t *testing.T) {
	gt := newGovernorTest(t, governorQueryPolicy(), false)
	gt.scaler.addShape("web", 1, 1, 10)
	gt.scaler.started = make(chan string, 10)
	gt.scaler.gate = make(chan struct{})
	q := &answers{values: map[string]float64{webQuery: 200}, errs: map[string]error{}}
	queries := map[string]string{"web": webQuery}
	ctx := context.Background()

	gt.g.queryOnce(ctx, q, queries)
	select {
	case <-gt.scaler.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the launch never started")
	}

	q.set(webQuery, 500, nil)
	gt.g.queryOnce(ctx, q, queries)
	q.set(webQuery, 700, nil)
	gt.g.queryOnce(ctx, q, queries)
	close(gt.scaler.gate)
	gt.g.wait()

	gt.wantOps("launch web/web-*")
	gt.wantLog(`current=2 desired=2 action=none why="cooldown: scale up to 7 held, last scaling 0s ago, scale_up_cooldown 30s; query value 700`)
	if strings.Contains(gt.logs.String(), "query value 500") {
		t.Errorf("the superseded value was decided on:\n%s", gt.logs)
	}
}
