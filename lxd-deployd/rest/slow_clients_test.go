package rest

import (
	"bufio"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyIsCutOff: a client that trickles its body is answered with an error at the
// body deadline; a handler that has read its body works on past the deadline unharmed.
func TestSlowBodyIsCutOff(t *testing.T) {
	old := bodyReadTimeout
	bodyReadTimeout = 300 * time.Millisecond
	t.Cleanup(func() { bodyReadTimeout = old })

	results := make(chan string, 2)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limitBodyRead(w, r)
		_, err := ReadBody(r)
		if err != nil {
			results <- "read error: " + err.Error()
			return
		}

		// Work longer than the body deadline: the request must stay alive.
		select {
		case <-time.After(3 * bodyReadTimeout):
			results <- "worked"
		case <-r.Context().Done():
			results <- "cancelled"
		}
	}))
	defer srv.Close()

	conn, err := net.Dial("tcp", strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = conn.Close() }()
	_, _ = fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{")
	select {
	case got := <-results:
		if !strings.Contains(got, "timeout") {
			t.Fatalf("trickled body: %s", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a trickled body was not cut off")
	}

	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"a":1}`))
	if err != nil {
		t.Fatal(err)
	}

	_ = resp.Body.Close()
	if got := <-results; got != "worked" {
		t.Fatalf("a handler past its body was %s", got)
	}
}

// TestUnauthenticatedConnectionsCapped: TLS connections without a client certificate are
// closed past the cap; a closed one frees its place.
func TestUnauthenticatedConnectionsCapped(t *testing.T) {
	limits := newConnLimits(2)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	srv.Config.ConnState = limits.ConnState
	srv.StartTLS()
	defer srv.Close()

	get := func(c net.Conn) error {
		_, err := fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		if err != nil {
			return err
		}

		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return err
		}

		return resp.Body.Close()
	}

	dial := func() net.Conn {
		c, err := tls.Dial("tcp", srv.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true})
		if err != nil {
			t.Fatal(err)
		}

		return c
	}

	first, second, third := dial(), dial(), dial()
	defer func() { _ = second.Close(); _ = third.Close() }()
	if get(first) != nil || get(second) != nil {
		t.Fatal("connections under the cap refused")
	}

	if get(third) == nil {
		t.Fatal("a third unauthenticated connection was served")
	}

	_ = first.Close()
	deadline := time.Now().Add(5 * time.Second)
	for limits.count() > 1 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}

	fourth := dial()
	defer func() { _ = fourth.Close() }()
	if get(fourth) != nil {
		t.Fatal("a closed connection did not free its place")
	}
}

func TestServerOwnErrorsInTheEnvelope(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Connection", "close")
		_, _ = io.WriteString(w, "handler text")
	}))
	srv.Listener = EnvelopeListener(srv.Listener)
	srv.Start()
	defer srv.Close()

	send := func(request string) (*http.Response, string) {
		conn, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}

		defer func() { _ = conn.Close() }()
		_, _ = io.WriteString(conn, request)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}

		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		return resp, string(body)
	}

	resp, body := send("GET /1.0/deployments/%zz HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(body, `"error_code":400`) || !strings.Contains(body, "escapes") {
		t.Fatalf("bad escape: %d %s %s", resp.StatusCode, resp.Header, body)
	}

	// A handler's own answer passes untouched, even plain text.
	resp, body = send("GET /ok HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp.StatusCode != 200 || body != "handler text" {
		t.Fatalf("handler answer changed: %d %s", resp.StatusCode, body)
	}
}
