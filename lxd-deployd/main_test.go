package main

import (
	"os"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/templates/isolate"
)

// TestMain lets the test binary serve as its own template expansion child, as the daemon
// binary does, so handlers tested here expand in a child process like the daemon.
func TestMain(m *testing.M) {
	isolate.MaybeChild()
	os.Exit(m.Run())
}
