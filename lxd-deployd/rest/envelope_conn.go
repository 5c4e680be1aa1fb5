package rest

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// Go's HTTP server answers some bad requests itself, before any handler runs: a request
// line with a malformed % escape, headers too large, a bad Host. It writes those answers
// as plain text straight to the connection. Every answer of this daemon is in LXD's
// envelope, so the connections are wrapped and those writes rewritten.
//
// The wrapping hides the *tls.Conn from the server, which would otherwise set r.TLS: the
// TLS connection is kept in the connection's context instead, and WithTLSState restores
// r.TLS from it. The TLS handshake then runs on the first read, under the server's header
// read deadline.

// serverErrorHeaders is what Go's server writes after the status line of its own errors.
var serverErrorHeaders = []byte("\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n")

// EnvelopeListener wraps the listener's connections so that the server's own plain-text
// error answers go out in the envelope.
func EnvelopeListener(l net.Listener) net.Listener {
	return envelopeListener{l}
}

// envelopeListener wraps accepted connections in envelopeConn.
type envelopeListener struct{ net.Listener }

func (l envelopeListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}

	return &envelopeConn{Conn: c}, nil
}

// envelopeConn rewrites the server's own plain-text error answers into the envelope.
type envelopeConn struct{ net.Conn }

func (c *envelopeConn) Write(p []byte) (int, error) {
	rewritten, ok := envelopeServerError(p)
	if !ok {
		return c.Conn.Write(p)
	}

	_, err := c.Conn.Write(rewritten)
	if err != nil {
		return 0, err
	}

	return len(p), nil
}

// envelopeServerError turns "HTTP/1.1 400 Bad Request<errorHeaders>400 Bad Request: msg"
// into the same status with a JSON envelope; anything else is left alone.
func envelopeServerError(p []byte) ([]byte, bool) {
	const prefix = "HTTP/1.1 "
	if !bytes.HasPrefix(p, []byte(prefix)) || len(p) < len(prefix)+3 {
		return nil, false
	}

	end := bytes.Index(p, serverErrorHeaders)
	if end < 0 || bytes.Contains(p[:end], []byte("\r\n")) {
		return nil, false // Not the status line followed directly by the server's headers.
	}

	code, err := strconv.Atoi(string(p[len(prefix) : len(prefix)+3]))
	if err != nil || code < 400 || code > 599 {
		return nil, false
	}

	// The server's own text is only the status ("400 Bad Request"), sometimes with a reason.
	msg := strings.ToLower(strings.TrimPrefix(string(p[end+len(serverErrorHeaders):]), string(p[len(prefix):end])))
	msg = strings.TrimPrefix(msg, ": ")
	if msg == "" {
		msg = "the request line or headers cannot be read"
	}

	body, err := json.Marshal(lxdapi.ResponseRaw{Type: lxdapi.ErrorResponse, Code: code, Error: fmt.Sprintf("%s: check the request's %% escapes (write %% as %%25, every other %% needs two hex digits) and its headers", msg)})
	if err != nil {
		return nil, false
	}

	var out bytes.Buffer
	fmt.Fprintf(&out, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n", code, http.StatusText(code), len(body)+1)
	out.Write(body)
	out.WriteByte('\n')
	return out.Bytes(), true
}

// TLSConnKey is the context key under which a server's ConnContext keeps a request's
// *tls.Conn, for WithTLSState.
type TLSConnKey struct{}

// UnwrapConn returns the connection inside an envelopeConn.
func UnwrapConn(c net.Conn) net.Conn {
	ec, ok := c.(*envelopeConn)
	if ok {
		return ec.Conn
	}

	return c
}

// WithTLSState sets r.TLS from the TLS connection kept in the context, for the handlers
// and the authentication that read it.
func WithTLSState(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil {
			tc, ok := r.Context().Value(TLSConnKey{}).(*tls.Conn)
			if ok {
				state := tc.ConnectionState()
				r.TLS = &state
			}
		}

		next.ServeHTTP(w, r)
	})
}
