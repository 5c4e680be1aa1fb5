package rest

import (
	"io"
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

// maxUnauthenticatedConns caps HTTPS connections not (yet) from a trusted identity: they
// can only read GET /1.0, sign in and redeem trust tokens, so a few suffice, and a flood
// of them cannot hold the daemon's file descriptors (conn_limits.go has the other budgets).
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
