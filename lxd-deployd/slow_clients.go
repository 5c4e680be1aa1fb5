package main

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"sync"
	"time"
)

// Slow clients: the HTTP server bounds the TLS handshake and headers (ReadHeaderTimeout)
// and idle keep-alive connections (IdleTimeout); these bound the rest.

// bodyReadTimeout bounds reading a request body (1 MiB at most, see maxBodySize): a
// client sending one byte every 20 s is cut off, not kept for minutes. Requests without a
// body (websocket upgrades, operation waits, every GET) have no body deadline, so long
// streams and waits are exempt by design. A variable so that tests can shorten it.
var bodyReadTimeout = 30 * time.Second

// maxUnauthenticatedConns caps HTTPS connections that presented no client certificate:
// they can only read GET /1.0 and redeem trust tokens, so a few suffice, and a flood of
// them cannot hold the daemon's file descriptors.
const maxUnauthenticatedConns = 128

// limitBodyRead puts a deadline on reading the request's body and lifts it once the body
// is read, so that a handler that works long after reading (a template expansion, a
// launch) is not cut off by it. The deadline is set only when there is a body to read:
// with none, Go's server is already watching the connection for the client going away and
// a deadline would cancel the request.
func limitBodyRead(w http.ResponseWriter, r *http.Request) {
	if r.Body == nil || r.Body == http.NoBody || r.ContentLength == 0 {
		return
	}

	rc := http.NewResponseController(w)
	err := rc.SetReadDeadline(time.Now().Add(bodyReadTimeout))
	if err != nil {
		return // Not a connection with deadlines (tests' recorders).
	}

	r.Body = &deadlineBody{ReadCloser: r.Body, lift: func() { _ = rc.SetReadDeadline(time.Time{}) }}
}

// deadlineBody lifts the read deadline when the body ends.
type deadlineBody struct {
	io.ReadCloser
	once sync.Once
	lift func()
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil {
		b.once.Do(b.lift)
	}

	return n, err
}

// connLimits counts HTTPS connections without a client certificate and closes those over
// the cap. It is the server's ConnState hook: a connection is judged when its first request
// arrives, after the TLS handshake.
type connLimits struct {
	mu      sync.Mutex
	max     int
	unauthd map[net.Conn]struct{}
}

func newConnLimits(max int) *connLimits {
	return &connLimits{max: max, unauthd: map[net.Conn]struct{}{}}
}

func (l *connLimits) connState(c net.Conn, state http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch state {
	case http.StateActive:
		_, counted := l.unauthd[c]
		tlsConn, ok := unwrapConn(c).(*tls.Conn)
		if counted || !ok || len(tlsConn.ConnectionState().PeerCertificates) > 0 {
			return
		}

		if len(l.unauthd) >= l.max {
			_ = c.Close()
			return
		}

		l.unauthd[c] = struct{}{}
	case http.StateClosed, http.StateHijacked:
		delete(l.unauthd, c)
	}
}

// count is how many unauthenticated connections are open (tests).
func (l *connLimits) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.unauthd)
}
