package backend

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
)

// TestLXDSockets: the configured socket first, then $LXD_DIR's and the usual ones, each once.
func TestLXDSockets(t *testing.T) {
	t.Setenv("LXD_DIR", "/var/lib/lxd")
	got := lxdSockets("/var/lib/lxd/unix.socket")
	want := []string{"/var/lib/lxd/unix.socket", "/var/snap/lxd/common/lxd/unix.socket"}
	if !slices.Equal(got, want) {
		t.Fatalf("sockets %v, want %v", got, want)
	}
}

// TestChoosePrivateOff: without a private LXD's directory the configured socket is used as
// given, answering or not.
func TestChoosePrivateOff(t *testing.T) {
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	socket, private, err := ChoosePrivate(context.Background(), "/nonexistent/unix.socket", "", logger)
	if socket != "/nonexistent/unix.socket" || private != nil || err != nil {
		t.Fatalf("got %q %v %v", socket, private, err)
	}
}
