package lxdtest

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

var shared struct {
	mu      sync.Mutex
	l       *LXD
	err     error // first start failure, repeated to every later caller
	stopped bool
}

// Shared returns the test binary's shared private LXD, starting it on first
// use. It is never stopped by the test framework: call [StopShared] from
// TestMain after m.Run (see the package documentation). Without that the
// daemon still dies with the test binary, but its directory under /tmp and
// its mounts are left behind.
//
// Tests using the shared daemon must not change server-wide state and should
// give their instances unique names (e.g. derived from t.Name()) and delete
// them when done. Use [Start] for anything else.
//
// The test is skipped if [Available] says no.
func Shared(t testing.TB) *LXD {
	t.Helper()
	skipUnlessAvailable(t)
	shared.mu.Lock()
	defer shared.mu.Unlock()
	switch {
	case shared.stopped:
		t.Fatal("lxdtest: Shared called after StopShared")
	case shared.l == nil && shared.err == nil:
		shared.l, shared.err = launch()
	}
	if shared.err != nil {
		t.Fatalf("lxdtest: shared LXD: %v", shared.err)
	}
	return shared.l
}

// StopShared tears down the daemon started by [Shared], if any. Call it
// from TestMain after m.Run; failures are printed to stderr.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.stopped = true
	if shared.l == nil {
		return
	}
	if err := shared.l.p.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "lxdtest: cleanup of shared LXD %s: %v\n", shared.l.Dir, err)
	}
	shared.l = nil
}
