package test

import (
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// must fails the test on an error: for calls that are not what the test is about.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// expectCode fails unless err is an API error with the given HTTP status.
func expectCode(t testing.TB, err error, status int, context string) {
	t.Helper()
	code, ok := lxdapi.StatusErrorMatch(err)
	if !ok || code != status {
		t.Fatalf("%s: expected HTTP %d, got %v", context, status, err)
	}
}

// contains reports whether s contains every one of parts, for readable assertions.
func contains(s string, parts ...string) bool {
	for _, part := range parts {
		if !strings.Contains(s, part) {
			return false
		}
	}

	return true
}

// phase runs one named phase of a long scenario as a subtest, so that a failure names the
// phase. A phase that fails ends the scenario: later phases build on what it left.
// Resources that outlive a phase (receivers, listeners, temporary directories) must come
// from the scenario's own t, outside any phase: a subtest's cleanups run when it ends. A
// helper that holds the scenario's t (a receiver's waitFor) still fails the scenario from
// inside a phase, with testing's note that a subtest failed its parent.
func phase(t *testing.T, name string, f func(t *testing.T)) {
	t.Helper()
	if !t.Run(name, f) {
		t.FailNow()
	}
}
