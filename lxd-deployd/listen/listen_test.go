package listen

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestAddresses: a specific address is itself, none is none, a wildcard expands to the
// machine's addresses (loopback among them) on the same port.
func TestAddresses(t *testing.T) {
	if got := Addresses(""); len(got) != 0 {
		t.Errorf("no HTTPS: %v", got)
	}

	if got := Addresses("192.0.2.1:8444"); !slices.Equal(got, []string{"192.0.2.1:8444"}) {
		t.Errorf("specific address: %v", got)
	}

	got := Addresses("[::]:8444")
	if !slices.Contains(got, "127.0.0.1:8444") {
		t.Errorf("wildcard: %v lacks 127.0.0.1:8444", got)
	}

	for _, a := range got {
		if !strings.HasSuffix(a, ":8444") {
			t.Errorf("wildcard: %s is not on the listen port", a)
		}
	}
}

// TestUnix: the admin socket is mode 0660, a stale socket is replaced, a live one refused.
func TestUnix(t *testing.T) {
	path := filepath.Join(t.TempDir(), "unix.socket")
	first, err := Unix(path)
	if err != nil {
		t.Fatal(err)
	}

	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o660 {
		t.Fatalf("mode %v %v, want 0660", info.Mode().Perm(), err)
	}

	go func() {
		for {
			c, err := first.Accept()
			if err != nil {
				return
			}

			_ = c.Close()
		}
	}()

	_, err = Unix(path)
	if err == nil || !strings.Contains(err.Error(), "another daemon is listening") {
		t.Fatalf("second listener on a live socket: %v", err)
	}

	// A dead daemon's socket file stays behind (the listener's own close would unlink it).
	first.(*net.UnixListener).SetUnlinkOnClose(false)
	_ = first.Close()
	again, err := Unix(path)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}

	_ = again.Close()
}
