package test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// waitConfig is how waitUntil polls and what it says when it gives up.
type waitConfig struct {
	interval time.Duration
	state    func() string
	logs     []func() string
}

// waitOption changes how waitUntil polls or what its failure says.
type waitOption func(*waitConfig)

// every polls at interval instead of every 200 ms: shorter where a test must catch a
// short-lived state (a launch in flight) or where start-up latency is measured.
func every(interval time.Duration) waitOption {
	return func(w *waitConfig) { w.interval = interval }
}

// showing adds the state last seen to the failure: state is called once, when waitUntil
// gives up, so it can describe what cond saw on its last call.
func showing(state func() string) waitOption {
	return func(w *waitConfig) { w.state = state }
}

// withLog adds a log (a daemon's d.Log, say) to the failure, read when waitUntil gives up.
func withLog(log func() string) waitOption {
	return func(w *waitConfig) { w.logs = append(w.logs, log) }
}

// waitUntil polls cond until it holds: the one way the end-to-end tests wait for something
// to happen. After timeout it fails the test with "what: not within timeout", then the state
// and logs its options add. cond may fail the test itself on a state that can no longer
// turn out well.
func waitUntil(t testing.TB, what string, timeout time.Duration, cond func() bool, opts ...waitOption) {
	t.Helper()
	w := waitConfig{interval: 200 * time.Millisecond}
	for _, opt := range opts {
		opt(&w)
	}

	if poll(timeout, cond, opts...) {
		return
	}

	var failure strings.Builder
	fmt.Fprintf(&failure, "%s: not within %s", what, timeout)
	if w.state != nil {
		fmt.Fprintf(&failure, ": %s", w.state())
	}

	for _, log := range w.logs {
		fmt.Fprintf(&failure, "\n%s", log())
	}

	t.Fatal(failure.String())
}

// poll is waitUntil's loop without the failure: it polls cond (every 200 ms, or as every
// says) until it holds, and reports whether it did within timeout. Only where a state that
// does not come is no failure: the randomized suite's operations and the benchmarks, which
// measure a checker that cannot keep up anyway; a hold, where cond is the change that must
// not come within the window (poll returning true is the failure); and a watch in a
// goroutine of its own, which must not fail the test.
func poll(timeout time.Duration, cond func() bool, opts ...waitOption) bool {
	w := waitConfig{interval: 200 * time.Millisecond}
	for _, opt := range opts {
		opt(&w)
	}

	return lxdtest.Poll(timeout, w.interval, cond)
}
