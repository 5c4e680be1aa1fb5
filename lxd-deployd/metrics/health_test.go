package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestHealthFamilies: the checker's families lint clean and count what they are told; a
// nil *Metrics takes the calls.
func TestHealthFamilies(t *testing.T) {
	var none *Metrics
	none.HealthCheck("exec", "passed", time.Millisecond)
	none.HealthOverdue("exec", 3)
	none.HealthReportBatch(4)

	m := New(Sources{})
	m.HealthCheck("exec", "passed", 20*time.Millisecond)
	m.HealthCheck("exec", "passed", 30*time.Millisecond)
	m.HealthCheck("ttl", "failed", 0)
	m.HealthOverdue("exec", 12)
	m.HealthReportBatch(5)
	requireLintClean(t, m)
	expected := `
# HELP lxd_deployd_health_checks_total Health checks the checker ran, by kind (exec, http, tcp, ttl: a missed report) and result (passed, failed, error: the check could not run).
# TYPE lxd_deployd_health_checks_total counter
lxd_deployd_health_checks_total{kind="exec",result="passed"} 2
lxd_deployd_health_checks_total{kind="ttl",result="failed"} 1
# HELP lxd_deployd_health_checks_overdue Instances waiting for their check past its due time by more than a fifth of the interval plus a second, by kind: above 0, the checks do not keep up (choose longer intervals, or ttl, http or tcp checks instead of exec).
# TYPE lxd_deployd_health_checks_overdue gauge
lxd_deployd_health_checks_overdue{kind="exec"} 12
`
	err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(expected), "lxd_deployd_health_checks_total", "lxd_deployd_health_checks_overdue")
	if err != nil {
		t.Fatal(err)
	}
}
