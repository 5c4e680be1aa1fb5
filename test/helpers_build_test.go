package test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// staticBuild is a static binary (CGO_ENABLED=0) built once per test run beside the
// daemon's, for pushing into a bare busybox container.
type staticBuild struct {
	once sync.Once
	path string
	err  error
}

// binary builds pkg as name the first time it is asked for and returns its path.
func (b *staticBuild) binary(t testing.TB, name string, pkg string) string {
	t.Helper()
	b.once.Do(func() {
		b.path = filepath.Join(filepath.Dir(cliBinary), name)
		build := exec.Command("go", "build", "-o", b.path, pkg)
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		out, err := build.CombinedOutput()
		if err != nil {
			b.err = err
			t.Logf("%s", out)
		}
	})

	if b.err != nil {
		t.Fatal(b.err)
	}

	return b.path
}
