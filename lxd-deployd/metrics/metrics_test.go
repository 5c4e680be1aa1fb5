package metrics

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

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

	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}

	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}

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
	err = testutil.GatherAndCompare(m.Registry(), strings.NewReader(expected), "lxd_deployd_instance_launches_total", "lxd_deployd_webhook_deliveries", "lxd_deployd_dqlite_transaction_retries_total")
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
}
