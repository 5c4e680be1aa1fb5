// Package test holds the end-to-end suites: they build the real binaries, start
// lxd-deployd with a temporary data directory, and drive it over its unix socket and over
// HTTPS with real client certificates.
package test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// binaries built once per test run.
var (
	daemonBinary string
	cliBinary    string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lxd-deployd-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}

	daemonBinary = filepath.Join(dir, "lxd-deployd")
	cliBinary = filepath.Join(dir, "lxd-deploy")
	for binary, pkg := range map[string]string{daemonBinary: "../lxd-deployd", cliBinary: "../cli"} {
		build := exec.Command("go", "build", "-o", binary, pkg)
		build.Stdout = os.Stderr
		build.Stderr = os.Stderr
		err = build.Run()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n", pkg, err)
			os.Exit(1)
		}
	}

	code := m.Run()
	lxdtest.StopShared()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
