package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// requireLintClean fails the test for each problem the Prometheus linter finds in m's
// families (names, help, units).
func requireLintClean(t *testing.T, m *Metrics) {
	t.Helper()
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}

	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestFamiliesLintAndCount(t *testing.T) {
	m := New(Sources{
		Snapshot: func(ctx context.Context) (Snapshot, error) {
			return Snapshot{
				Shapes:     []ShapeStat{{Project: "default", Deployment: "dep1", Shape: "web", Current: 2, Minimum: 1, Maximum: 3}},
				Deliveries: []DeliveryStat{{Project: "default", Deployment: "dep1", Status: "failed", Count: 4}},
			}, nil
		},
		LXDReachable:       func() bool { return true },
		OperationsRunning:  func() int { return 2 },
		Leader:             func(context.Context) (bool, error) { return true, nil },
		Members:            func(context.Context) (int, error) { return 1, nil },
		TransactionRetries: func() uint64 { return 7 },
	})

	m.Launch("default", "dep1", "web", ResultOK, 2*time.Second)
	m.Launch("default", "dep1", "web", ResultRefused, 0)
	m.Delete("default", "dep1", "web", ResultFailed, 0)
	m.APIRequest("/1.0/deployments", "GET", 200, time.Millisecond)
	m.LXDCall("create", time.Second, errors.New("boom"))
	m.WebhookAttempt("default", "dep1", time.Millisecond, nil)
	m.ScaleRequest("default", "dep1", "web")
	m.TemplateExpansion(time.Millisecond)

	requireLintClean(t, m)
	expected := `
# HELP lxd_deployd_instance_launches_total Instance launches asked of the governor API, by result: ok, refused_bound (the shape is at its maximum), failed.
# TYPE lxd_deployd_instance_launches_total counter
lxd_deployd_instance_launches_total{deployment="dep1",project="default",result="ok",shape="web"} 1
lxd_deployd_instance_launches_total{deployment="dep1",project="default",result="refused_bound",shape="web"} 1
# HELP lxd_deployd_webhook_deliveries Webhook deliveries by status (pending, delivered, failed); finished ones are kept 7 days.
# TYPE lxd_deployd_webhook_deliveries gauge
lxd_deployd_webhook_deliveries{deployment="dep1",project="default",status="delivered"} 0
lxd_deployd_webhook_deliveries{deployment="dep1",project="default",status="failed"} 4
lxd_deployd_webhook_deliveries{deployment="dep1",project="default",status="pending"} 0
# HELP lxd_deployd_dqlite_transaction_retries_total Database transactions retried after a busy or leadership error.
# TYPE lxd_deployd_dqlite_transaction_retries_total counter
lxd_deployd_dqlite_transaction_retries_total 7
`
	err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(expected), "lxd_deployd_instance_launches_total", "lxd_deployd_webhook_deliveries", "lxd_deployd_dqlite_transaction_retries_total")
	if err != nil {
		t.Fatal(err)
	}
}

// A failing snapshot fails that family only: the rest of the scrape is still served.
func TestSnapshotErrorKeepsOtherFamilies(t *testing.T) {
	m := New(Sources{
		Snapshot:     func(ctx context.Context) (Snapshot, error) { return Snapshot{}, errors.New("database unavailable") },
		LXDReachable: func() bool { return false },
	})

	families, err := m.Registry().Gather()
	if err == nil || !strings.Contains(err.Error(), "database unavailable") {
		t.Fatalf("snapshot error not reported: %v", err)
	}

	for _, f := range families {
		if f.GetName() == "lxd_deployd_lxd_reachable" {
			return
		}
	}

	t.Fatal("lxd_reachable missing after a snapshot error")
}

// A nil *Metrics records nothing and does not panic: code paths without metrics need no
// checks.
func TestNilMetrics(t *testing.T) {
	var m *Metrics
	m.Launch("p", "d", "s", ResultOK, 0)
	m.Delete("p", "d", "s", ResultOK, 0)
	m.APIRequest("/", "GET", 200, 0)
	m.LXDCall("list", 0, nil)
	m.WebhookAttempt("p", "d", 0, nil)
	m.ScaleRequest("p", "d", "s")
	m.TemplateExpansion(0)
	m.Replacement("p", "d", "s", ReplacementFailed)
	m.RolloutFinished("p", "d", "s", "complete")
	m.HookWaitEnded("p", "d", "s", "terminating:wait", "abandon", true)
}

// The shape gauges of the lifecycle and rollout features: every shape has its size,
// readiness and revision; a feature's families appear for the shapes that use it only, so
// a scrape of many plain shapes stays small.
func TestShapeLifecycleGauges(t *testing.T) {
	m := New(Sources{
		Snapshot: func(ctx context.Context) (Snapshot, error) {
			return Snapshot{Shapes: []ShapeStat{
				{Project: "default", Deployment: "dep1", Shape: "plain", Current: 2, Maximum: 3, Ready: 2, Revision: 1, Unknown: 2},
				{Project: "default", Deployment: "dep1", Shape: "web", Current: 4, Maximum: 5, Ready: 1, Outdated: 3, Revision: 3,
					Healthy: 1, Unhealthy: 1, Starting: 2, LaunchingWait: 1, WarmPoolReady: 1, WarmPoolSize: 2, Degraded: true, RolloutsPaused: 1,
					HasHealthChecks: true, HasHooks: true, HasWarmPool: true},
			}}, nil
		},
	})

	m.Replacement("default", "dep1", "web", ReplacementGaveUp)
	m.RolloutFinished("default", "dep1", "web", "reverted")
	m.HookWaitEnded("default", "dep1", "web", "launching:wait", "continue", true)

	requireLintClean(t, m)
	expected := `
# HELP lxd_deployd_shape_instances_ready Instances ready: created, out of their launching:wait, and healthy when the shape has health checks.
# TYPE lxd_deployd_shape_instances_ready gauge
lxd_deployd_shape_instances_ready{deployment="dep1",project="default",shape="plain"} 2
lxd_deployd_shape_instances_ready{deployment="dep1",project="default",shape="web"} 1
# HELP lxd_deployd_shape_instances_outdated Instances made from an older revision than the shape's latest (what a rollout replaces).
# TYPE lxd_deployd_shape_instances_outdated gauge
lxd_deployd_shape_instances_outdated{deployment="dep1",project="default",shape="plain"} 0
lxd_deployd_shape_instances_outdated{deployment="dep1",project="default",shape="web"} 3
# HELP lxd_deployd_shape_revision A shape's latest revision.
# TYPE lxd_deployd_shape_revision gauge
lxd_deployd_shape_revision{deployment="dep1",project="default",shape="plain"} 1
lxd_deployd_shape_revision{deployment="dep1",project="default",shape="web"} 3
# HELP lxd_deployd_shape_degraded 1 when autohealing gave up on the shape after failed replacements in a row (until the shape is updated); shapes with health checks only.
# TYPE lxd_deployd_shape_degraded gauge
lxd_deployd_shape_degraded{deployment="dep1",project="default",shape="web"} 1
# HELP lxd_deployd_shape_instances_health Instances of a shape by their last health verdict: healthy, unhealthy, starting, unknown (no check yet); shapes with health checks only.
# TYPE lxd_deployd_shape_instances_health gauge
lxd_deployd_shape_instances_health{deployment="dep1",health="healthy",project="default",shape="web"} 1
lxd_deployd_shape_instances_health{deployment="dep1",health="starting",project="default",shape="web"} 2
lxd_deployd_shape_instances_health{deployment="dep1",health="unhealthy",project="default",shape="web"} 1
lxd_deployd_shape_instances_health{deployment="dep1",health="unknown",project="default",shape="web"} 0
# HELP lxd_deployd_shape_instances_hook_waiting Instances waiting in a lifecycle hook: launching:wait, terminating:wait; shapes with hooks only.
# TYPE lxd_deployd_shape_instances_hook_waiting gauge
lxd_deployd_shape_instances_hook_waiting{deployment="dep1",hook="launching:wait",project="default",shape="web"} 1
lxd_deployd_shape_instances_hook_waiting{deployment="dep1",hook="terminating:wait",project="default",shape="web"} 0
# HELP lxd_deployd_shape_warm_pool_ready Warm pool instances ready to be taken by a launch; shapes with a warm pool only.
# TYPE lxd_deployd_shape_warm_pool_ready gauge
lxd_deployd_shape_warm_pool_ready{deployment="dep1",project="default",shape="web"} 1
# HELP lxd_deployd_shape_warm_pool_size The warm pool size a shape keeps (warm_pool.size); shapes with a warm pool only.
# TYPE lxd_deployd_shape_warm_pool_size gauge
lxd_deployd_shape_warm_pool_size{deployment="dep1",project="default",shape="web"} 2
# HELP lxd_deployd_shape_rollouts A shape's active rollout by status: running, paused (0 or 1), while it has one.
# TYPE lxd_deployd_shape_rollouts gauge
lxd_deployd_shape_rollouts{deployment="dep1",project="default",shape="web",status="paused"} 1
lxd_deployd_shape_rollouts{deployment="dep1",project="default",shape="web",status="running"} 0
# HELP lxd_deployd_shape_rollout_progress_ratio Share of a shape's instances at its latest revision, while a rollout is running or paused.
# TYPE lxd_deployd_shape_rollout_progress_ratio gauge
lxd_deployd_shape_rollout_progress_ratio{deployment="dep1",project="default",shape="web"} 0.25
# HELP lxd_deployd_autoheal_replacements_total Replacements autohealing started, by result: ok (the replacement was launched; the old instance goes next), failed (the replacement could not be launched), gave_up (not started: too many failed in a row, the shape is now degraded).
# TYPE lxd_deployd_autoheal_replacements_total counter
lxd_deployd_autoheal_replacements_total{deployment="dep1",project="default",result="gave_up",shape="web"} 1
# HELP lxd_deployd_rollouts_finished_total Rollouts that ended, by final status: complete, failed, cancelled, reverted.
# TYPE lxd_deployd_rollouts_finished_total counter
lxd_deployd_rollouts_finished_total{deployment="dep1",project="default",shape="web",status="reverted"} 1
# HELP lxd_deployd_lifecycle_hook_waits_ended_total Lifecycle hook waits ended, by hook (launching:wait, terminating:wait), action (continue, abandon) and by whom (request: an action was posted; timeout: the shape's default_action).
# TYPE lxd_deployd_lifecycle_hook_waits_ended_total counter
lxd_deployd_lifecycle_hook_waits_ended_total{action="continue",by="timeout",deployment="dep1",hook="launching:wait",project="default",shape="web"} 1
`
	err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(expected),
		"lxd_deployd_shape_instances_ready", "lxd_deployd_shape_instances_outdated", "lxd_deployd_shape_revision", "lxd_deployd_shape_degraded",
		"lxd_deployd_shape_instances_health", "lxd_deployd_shape_instances_hook_waiting", "lxd_deployd_shape_warm_pool_ready", "lxd_deployd_shape_warm_pool_size",
		"lxd_deployd_shape_rollouts", "lxd_deployd_shape_rollout_progress_ratio",
		"lxd_deployd_autoheal_replacements_total", "lxd_deployd_rollouts_finished_total", "lxd_deployd_lifecycle_hook_waits_ended_total")
	if err != nil {
		t.Fatal(err)
	}
}
