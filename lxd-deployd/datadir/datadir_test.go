package datadir

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPrepareTightensModes: the directory becomes 0711 and the daemon's files their modes,
// whatever they had.
func TestPrepareTightensModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	err := os.MkdirAll(dir, 0o777)
	if err != nil {
		t.Fatal(err)
	}

	err = os.WriteFile(filepath.Join(dir, "server.key"), []byte("key"), 0o666)
	if err != nil {
		t.Fatal(err)
	}

	err = Prepare(dir)
	if err != nil {
		t.Fatal(err)
	}

	for name, want := range map[string]os.FileMode{".": dataDirMode, "server.key": 0o600} {
		info, err := os.Stat(filepath.Join(dir, name))
		if err != nil || info.Mode().Perm() != want {
			t.Errorf("%s: mode %v %v, want %v", name, info.Mode().Perm(), err, want)
		}
	}
}
