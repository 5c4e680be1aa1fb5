package privatelxd

import (
	"os"
	"path/filepath"
	"testing"

	lxd "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
)

// A kept directory survives Stop: the next Launch finds the pool, the image and the
// instances again, and a second Launch while one runs is refused.
func TestKeptDirectory(t *testing.T) {
	if reason, ok := Available(); !ok {
		if os.Getenv("LXDTEST_REQUIRE") != "" {
			t.Fatalf("private LXD unavailable: %s", reason)
		}

		t.Skipf("private LXD unavailable: %s", reason)
	}

	parent, err := os.MkdirTemp("/tmp", "plxd-")
	if err != nil {
		t.Fatal(err)
	}

	_ = os.Chmod(parent, 0o711)
	dir := filepath.Join(parent, "lxd")
	t.Cleanup(func() {
		if err := Remove(dir); err != nil {
			t.Error(err)
		}

		_ = os.RemoveAll(parent)
	})

	l, err := Launch(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}

	_, err = Launch(Options{Dir: dir})
	if err == nil {
		t.Fatal("a second private LXD on the same directory was started")
	}

	c, err := lxd.ConnectLXDUnix(l.Socket, nil)
	if err != nil {
		t.Fatal(err)
	}

	op, err := c.CreateInstance(api.InstancesPost{Name: "c1", Source: api.InstanceSource{Type: "image", Alias: Image}})
	if err == nil {
		err = op.Wait()
	}

	c.Disconnect()
	if err != nil {
		t.Fatal(err)
	}

	err = l.Stop()
	if err != nil {
		t.Fatal(err)
	}

	l, err = Launch(Options{Dir: dir})
	if err != nil {
		t.Fatalf("launch again on the kept directory: %v", err)
	}

	defer func() { _ = l.Stop() }()
	c, err = lxd.ConnectLXDUnix(l.Socket, nil)
	if err != nil {
		t.Fatal(err)
	}

	defer c.Disconnect()
	names, err := c.GetInstanceNames(api.InstanceTypeAny)
	if err != nil || len(names) != 1 || names[0] != "c1" {
		t.Fatalf("instances after a restart: %v, %v", names, err)
	}
}
