package test

import (
	"net/http"
	"os"
	"testing"
	"time"
)

// TestReferenceGovernorIdleToZero (issue 36): the reference governor (lxd-deploy governor
// run, idle_to_zero 4s) wakes a shape at zero on the front door's scale request, so the
// first request is served; with no more requests it takes the shape back to zero once the
// door's figures in the metrics events show it idle; and the next request wakes it again.
func TestReferenceGovernorIdleToZero(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	z := newZeroEnvGoverned(t, 100, "45s", false)
	z.runReferenceGovernor(t, "shapes:\n  web:\n    idle_to_zero: 4s\n")
	for round := 1; round <= 2; round++ {
		a := ask()
		if a.err != nil || a.code != http.StatusOK {
			t.Fatalf("round %d: the first request at zero: %v", round, a)
		}

		t.Logf("measured: round %d: the first request at zero served after %v (the reference governor woke the shape)", round, a.took.Round(time.Millisecond))
		start := time.Now()
		z.waitUntil(t, "the governor taking the idle shape to zero", 2*time.Minute, func() bool { return z.size() == 0 })
		t.Logf("measured: round %d: back at zero %v after the last request (idle_to_zero 4s, metrics every 1s)", round, time.Since(start).Round(100*time.Millisecond))
		// The door's servers go at the doorkeeper's next round.
		time.Sleep(2 * time.Second)
	}
}

// runReferenceGovernor runs lxd-deploy governor run for dep1 with this policy file, as an
// admin deployment key over HTTPS, receiving the deployment's webhooks (metrics every
// second) until the test ends; its log is shown when the test fails.
func (z *zeroEnv) runReferenceGovernor(t *testing.T, policy string) {
	t.Helper()
	z.governorLog = startWebhookGovernor(t, z.governorEnv, policy, "1s").log
}

// size is the shape's scaling_current (-1 when it cannot be read).
func (z *zeroEnv) size() int {
	s, _, err := z.admin.GetDeploymentShape("dep1", "web")
	if err != nil {
		return -1
	}

	return s.ScalingCurrent
}
