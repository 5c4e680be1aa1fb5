package privatelxd

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// traversableTemp makes a directory under /tmp that others may traverse, for the tests to
// build closed and open paths under.
func traversableTemp(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "plxd-reach-")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	err = os.Chmod(dir, 0o711)
	if err != nil {
		t.Fatal(err)
	}

	return dir
}

func TestClosedAncestor(t *testing.T) {
	base := traversableTemp(t)
	closed := filepath.Join(base, "home")
	if err := os.Mkdir(closed, 0o700); err != nil {
		t.Fatal(err)
	}

	if err := os.Chmod(closed, 0o700); err != nil {
		t.Fatal(err)
	}

	open := filepath.Join(base, "srv")
	if err := os.Mkdir(open, 0o755); err != nil {
		t.Fatal(err)
	}

	if err := os.Chmod(open, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		dir  string
		want string
	}{
		{filepath.Join(open, "checkout", ".run", "lxd"), ""},
		{filepath.Join(closed, "checkout", ".run", "lxd"), closed},
		{closed, closed},
		{base, ""},
	}

	for _, tt := range tests {
		got, _, err := closedAncestor(tt.dir)
		if err != nil || got != tt.want {
			t.Errorf("closedAncestor(%s) = %q, %v; want %q", tt.dir, got, err, tt.want)
		}
	}
}

func TestPlaceKept(t *testing.T) {
	base := traversableTemp(t)
	root := filepath.Join(base, "relocated")
	home := filepath.Join(base, "home")
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}

	// Reachable: the directory itself, untouched.
	open := filepath.Join(base, "checkout", ".run", "lxd")
	got, why, err := placeKept(open, root)
	if err != nil || got != open || why != "" {
		t.Fatalf("placeKept(%s) = %q, %q, %v; want the directory itself", open, got, why, err)
	}

	// Under a closed directory: relocated under root, linked from the requested path.
	dir := filepath.Join(home, "checkout", ".run", "lxd")
	got, why, err = placeKept(dir, root)
	if err != nil || filepath.Dir(got) != root || !strings.Contains(why, home) {
		t.Fatalf("placeKept(%s) = %q, %q, %v; want a directory under %s and why", dir, got, why, err, root)
	}

	info, err := os.Stat(root)
	if err != nil || info.Mode().Perm() != 0o711 {
		t.Fatalf("%s: %v %v, want mode 0711", root, info, err)
	}

	target, err := os.Readlink(dir)
	if err != nil || target != got {
		t.Fatalf("%s links to %q (%v), want %s", dir, target, err, got)
	}

	// The next run finds the link and the same directory.
	again, _, err := placeKept(dir, root)
	if err != nil || again != got {
		t.Fatalf("second placeKept(%s) = %q, %v; want %s", dir, again, err, got)
	}

	// A closed directory that already holds an LXD is refused, saying what to do.
	full := filepath.Join(home, "other", "lxd")
	if err := os.MkdirAll(filepath.Join(full, "containers"), 0o700); err != nil {
		t.Fatal(err)
	}

	_, _, err = placeKept(full, root)
	var unreachable *UnreachableError
	if !errors.As(err, &unreachable) || !strings.Contains(err.Error(), "make clean") || !strings.Contains(err.Error(), "0700") {
		t.Fatalf("placeKept(%s) = %v; want a refusal that says why and what to do", full, err)
	}
}
