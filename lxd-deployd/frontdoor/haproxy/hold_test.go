package haproxy

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderHold: a frontend with a hold gets it as a backup server (used only while no
// instance is up), named so that the runtime plans leave it alone; a hold that comes, goes
// or moves changes the layout (a reload).
func TestRenderHold(t *testing.T) {
	fs := testFrontends()
	fs[0].Hold = "127.0.0.1:40001"
	cfg := render(pathsIn("/run/fd"), 1, fs)
	if !strings.Contains(cfg, "    server hold 127.0.0.1:40001 backup\n") {
		t.Fatalf("no backup hold server:\n%s", cfg)
	}

	if _, ok := instanceOf(holdServer); ok {
		t.Fatal("the hold server's name reads as an instance's: Apply would delete it")
	}

	if layout(fs) == layout(testFrontends()) {
		t.Fatal("a hold does not change the layout")
	}

	moved := testFrontends()
	moved[0].Hold = "127.0.0.1:40002"
	if layout(fs) == layout(moved) {
		t.Fatal("a moved hold does not change the layout")
	}

	if err := validate(fs, true); err != nil {
		t.Fatal(err)
	}

	bad := testFrontends()
	bad[0].Hold = "localhost"
	if err := validate(bad, true); err == nil || !strings.Contains(err.Error(), "ip:port") {
		t.Fatalf("bad hold: %v", err)
	}

	if bin, err := exec.LookPath("haproxy"); err == nil {
		dir := t.TempDir()
		path := filepath.Join(dir, "haproxy.cfg")
		if err := os.WriteFile(path, []byte(render(pathsIn(dir), 1, fs)), 0o600); err != nil {
			t.Fatal(err)
		}

		if out, err := exec.Command(bin, "-c", "-f", path).CombinedOutput(); err != nil {
			t.Fatalf("haproxy -c: %v\n%s", err, out)
		}
	}
}
