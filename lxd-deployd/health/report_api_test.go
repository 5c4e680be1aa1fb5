package health

import (
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestReportResult: a passing report is a check that passed; any other is a failed one,
// exit code 1, its output kept either way.
func TestReportResult(t *testing.T) {
	now := time.Now()
	passed := ReportResult(api.DeploymentInstanceHealthPut{Status: api.HealthReportPassing, Output: "ok"}, now)
	if !passed.Passed || passed.ExitCode != 0 || passed.Output != "ok" || !passed.At.Equal(now) {
		t.Fatalf("a passing report: %+v", passed)
	}

	failed := ReportResult(api.DeploymentInstanceHealthPut{Status: "failing", Output: "db down"}, now)
	if failed.Passed || failed.ExitCode != 1 || failed.Output != "db down" {
		t.Fatalf("a failing report: %+v", failed)
	}
}
