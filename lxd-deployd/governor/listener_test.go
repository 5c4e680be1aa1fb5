package governor

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/mdlayher/vsock"
)

type connKey struct{}

// serveOrigin answers every request with the instance and CID the transport tagged the
// connection with.
func serveOrigin(t *testing.T, l *Listener) {
	t.Helper()
	server := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			conn := r.Context().Value(connKey{}).(*Conn)
			_, _ = fmt.Fprintf(w, "%s/%s/%d", conn.Project, conn.Instance, conn.CID)
		}),
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c.(*Conn))
		},
	}

	go func() { _ = server.Serve(l) }()
	t.Cleanup(func() { _ = server.Close() })
}

func get(t *testing.T, dial func() (net.Conn, error)) string {
	t.Helper()
	c := &http.Client{Transport: &http.Transport{Dial: func(string, string) (net.Conn, error) { return dial() }}}
	resp, err := c.Get("http://governor/")
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(resp.Body)
	return string(body)
}

func TestInstanceSocketsTagConnections(t *testing.T) {
	dir, err := os.MkdirTemp("", "gov-")
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	l, err := NewListener(dir)
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = l.Close() }()
	serveOrigin(t, l)

	web, err := l.AddInstance("default", "web1")
	if err != nil {
		t.Fatal(err)
	}

	other, err := l.AddInstance("p2", "web1")
	if err != nil {
		t.Fatal(err)
	}

	if web == other || filepath.Dir(web) != dir {
		t.Fatalf("socket paths %s and %s", web, other)
	}

	info, err := os.Stat(web)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode: %v %v", info, err)
	}

	if got := get(t, func() (net.Conn, error) { return net.Dial("unix", web) }); got != "default/web1/0" {
		t.Fatalf("web1 socket tagged %q", got)
	}

	if got := get(t, func() (net.Conn, error) { return net.Dial("unix", other) }); got != "p2/web1/0" {
		t.Fatalf("p2 socket tagged %q", got)
	}

	l.RemoveInstance("default", "web1")
	_, err = os.Stat(web)
	if !os.IsNotExist(err) {
		t.Fatalf("removed socket still exists: %v", err)
	}
}

// TestVsockRoundTrip serves over vsock where the kernel can loop a connection back to this
// host; elsewhere it says why it cannot and skips.
func TestVsockRoundTrip(t *testing.T) {
	l, err := NewListener(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = l.Close() }()
	const port = 18444
	err = l.ListenVsock(port)
	if err != nil {
		t.Skipf("vsock listener unavailable on this kernel: %v", err)
	}

	serveOrigin(t, l)
	conn, err := vsock.Dial(vsock.Local, port, nil)
	if err != nil {
		t.Skipf("vsock listens here but cannot loop back to this host (no loopback transport): %v", err)
	}

	_ = conn.Close()
	got := get(t, func() (net.Conn, error) { return vsock.Dial(vsock.Local, port, nil) })
	if got != fmt.Sprintf("//%d", vsock.Local) {
		t.Fatalf("vsock connection tagged %q", got)
	}
}
