package main

import (
	"os"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/templates/isolate"
)

// TestMain lets the test binary serve as its own template expansion child, as lxd-deploy
// does, so commands tested here expand in a child process like the real CLI.
func TestMain(m *testing.M) {
	isolate.MaybeChild()
	os.Exit(m.Run())
}
