package test

import (
	"net/http"
	"os"
	"strings"
	"testing"
	"time"
)

// TestScaleToZeroWake (issue 36): a shape at zero instances behind the daemon's private
// HAProxy holds its first requests: a burst of 50 concurrent first requests is held, the
// front door asks the governor (the test) for capacity once, with the count waiting, and
// every request succeeds once the instance serves; back at zero, a single request wakes it
// again; and the hold's bounds refuse what exceeds them with a clear 503 (hold_max at once,
// hold_timeout after the wait). In a network namespace the test makes, as
// TestTrafficFrontDoor.
func TestScaleToZeroWake(t *testing.T) {
	t.Parallel()
	if os.Getenv(netnsChildEnv) == "" {
		runInNetns(t)
		return
	}

	z := newZeroEnv(t, 100, "45s")
	phase(t, "a burst of 50 first requests is held and served", func(t *testing.T) {
		answers := burst(50)
		if n, sample := failed(answers); n > 0 {
			t.Fatalf("%d of 50 first requests failed: %v", n, sample)
		}

		wakes := z.wakes()
		if len(wakes) != 1 || wakes[0].Target != 1 || !strings.Contains(wakes[0].Reason, "at the front door for an instance") {
			t.Fatalf("front door scale requests %+v: want one, target 1, saying how many wait", wakes)
		}

		var slowest time.Duration
		for _, a := range answers {
			slowest = max(slowest, a.took)
		}

		t.Logf("measured: 50 concurrent first requests from zero all served, the slowest after %v; the wake said %q", slowest.Round(time.Millisecond), wakes[0].Reason)
	})

	phase(t, "back at zero, one request wakes the shape again", func(t *testing.T) {
		z.toZero(t)
		a := ask()
		if a.err != nil || a.code != http.StatusOK {
			t.Fatalf("first request after going to zero: %v", a)
		}

		if len(z.wakes()) != 2 {
			t.Fatalf("front door scale requests %+v: want a second", z.wakes())
		}

		t.Logf("measured: first request from zero (cold launch) served after %v", a.took.Round(time.Millisecond))
	})

	phase(t, "the hold's bounds refuse clearly", func(t *testing.T) {
		z.governing(false)
		z.toZero(t)
		z.setHold(t, 3, "2s")
		// The doorkeeper hands the new bounds to the hold within its round.
		time.Sleep(2 * time.Second)
		answers := burst(6)
		full, timedOut := 0, 0
		for _, a := range answers {
			switch {
			case a.code == http.StatusServiceUnavailable && strings.Contains(a.body, "traffic.hold_max 3"):
				full++
			case a.code == http.StatusServiceUnavailable && strings.Contains(a.body, "traffic.hold_timeout") && a.took >= 2*time.Second:
				timedOut++
			default:
				t.Errorf("unexpected answer: %v", a)
			}
		}

		if full != 3 || timedOut != 3 {
			t.Fatalf("%d refused at hold_max, %d at hold_timeout: want 3 and 3 (%v)", full, timedOut, answers)
		}

		t.Logf("measured: 6 requests at zero with hold_max 3, hold_timeout 2s: 3 refused at once (hold_max), 3 after the wait (hold_timeout)")
	})
}
