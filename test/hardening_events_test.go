package test

import (
	"crypto/tls"
	"net/http"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestEventStreamLimitsOverHTTPS: over real TLS, a trusted caller's 100 MiB websocket frame
// ends its stream without the daemon growing, a cross-origin upgrade is refused, and one
// caller cannot hold more than 32 streams.
func TestEventStreamLimitsOverHTTPS(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	unix := d.Unix(t)
	admin := newIdentity(t)
	trustIdentity(t, unix, admin, "admin", "client")
	pair, err := tls.X509KeyPair([]byte(admin.CertPEM), []byte(admin.KeyPEM))
	must(t, err)
	dialer := websocket.Dialer{TLSClientConfig: &tls.Config{Certificates: []tls.Certificate{pair}, InsecureSkipVerify: true}, HandshakeTimeout: 10 * time.Second}
	url := "wss://" + d.HTTPSAddress + "/1.0/events"

	before := daemonRSS(t, d)
	conn, _, err := dialer.Dial(url, nil)
	must(t, err)
	frame := make([]byte, 100<<20)
	_ = conn.SetWriteDeadline(time.Now().Add(30 * time.Second))
	_ = conn.WriteMessage(websocket.BinaryMessage, frame) // The daemon hangs up early: the write may fail.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, _, err = conn.ReadMessage()
	if err == nil {
		t.Fatal("the stream survived a 100 MiB client frame")
	}

	_ = conn.Close()
	if after := daemonRSS(t, d); after > before+32<<20 {
		t.Fatalf("the daemon grew from %d to %d MiB on a large frame", before>>20, after>>20)
	}

	_, resp, err := dialer.Dial(url, http.Header{"Origin": []string{"https://evil.example"}})
	if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin upgrade: %v", err)
	}

	conns := []*websocket.Conn{}
	defer func() {
		for _, c := range conns {
			_ = c.Close()
		}
	}()

	for i := 0; i < 32; i++ {
		c, _, err := dialer.Dial(url, nil)
		must(t, err)
		conns = append(conns, c)
	}

	_, resp, err = dialer.Dial(url, nil)
	if err == nil || resp == nil || resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("a 33rd stream: %v", err)
	}
}
