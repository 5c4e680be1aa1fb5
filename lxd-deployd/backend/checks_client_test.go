package backend

import (
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// checksServer is an HTTP server on a unix socket that counts the connections it accepts
// and can close every one of them, as LXD does when it restarts.
type checksServer struct {
	socket   string
	accepted atomic.Int64
	mu       sync.Mutex
	conns    []net.Conn
}

func newChecksServer(t testing.TB, handler http.Handler) *checksServer {
	t.Helper()
	s := &checksServer{socket: filepath.Join(t.TempDir(), "unix.socket")}
	listener, err := net.Listen("unix", s.socket)
	if err != nil {
		t.Fatal(err)
	}

	server := &http.Server{Handler: handler, ConnState: func(conn net.Conn, state http.ConnState) {
		if state == http.StateNew {
			s.accepted.Add(1)
			s.mu.Lock()
			s.conns = append(s.conns, conn)
			s.mu.Unlock()
		}
	}}

	go func() { _ = server.Serve(listener) }()
	t.Cleanup(func() { _ = server.Close() })
	return s
}

// closeAll closes every connection from the server's side.
func (s *checksServer) closeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, conn := range s.conns {
		_ = conn.Close()
	}

	s.conns = nil
}

func (s *checksServer) client() *checksClient {
	return &checksClient{dial: func(ctx context.Context) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", s.socket)
	}}
}

// TestChecksClientKeepsConnections sends request after request on one connection, reading
// each answer through rawDo as the checks do.
func TestChecksClientKeepsConnections(t *testing.T) {
	var posts atomic.Int64
	s := newChecksServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
			body, _ := io.ReadAll(r.Body)
			if string(body) != `{"command":["true"]}` {
				http.Error(w, "bad body "+string(body), http.StatusBadRequest)
				return
			}
		}

		_, _ = io.WriteString(w, `{"type":"sync","status":"Success","status_code":200,"metadata":{"id":"x"}}`+"\n")
	}))

	c := s.client()
	ctx := context.Background()
	for range 10 {
		_, err := rawDo(ctx, c, "GET", "/1.0/operations/x/wait", "", nil, nil)
		if err != nil {
			t.Fatal(err)
		}

		_, err = rawDo(ctx, replayable{c}, "POST", "/1.0/instances/c1/exec", "p1", nil, map[string]any{"command": []string{"true"}})
		if err != nil {
			t.Fatal(err)
		}
	}

	if got := s.accepted.Load(); got != 1 {
		t.Fatalf("%d connections for 20 requests, want 1", got)
	}

	if posts.Load() != 10 {
		t.Fatalf("%d posts, want 10", posts.Load())
	}
}

// TestChecksClientResendsOnClosedConnections: LXD closed the idle connections (a restart).
// A GET and a POST marked replayable are sent again on a new connection; a POST not marked
// so is not sent twice, and its error says what failed.
func TestChecksClientResendsOnClosedConnections(t *testing.T) {
	var posts atomic.Int64
	s := newChecksServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}

		_, _ = io.WriteString(w, `{"type":"sync","status":"Success","status_code":200,"metadata":{}}`)
	}))

	c := s.client()
	ctx := context.Background()
	for _, send := range []func() error{
		func() error { _, err := rawDo(ctx, c, "GET", "/1.0", "", nil, nil); return err },
		func() error {
			_, err := rawDo(ctx, replayable{c}, "POST", "/1.0/x", "", nil, map[string]any{})
			return err
		},
	} {
		err := send() // a connection to keep
		if err != nil {
			t.Fatal(err)
		}

		s.closeAll()
		time.Sleep(50 * time.Millisecond) // the close reaches the client's side
		err = send()
		if err != nil {
			t.Fatalf("after LXD closed the connection: %v", err)
		}
	}

	if posts.Load() != 2 {
		t.Fatalf("%d posts arrived, want 2", posts.Load())
	}

	s.closeAll()
	time.Sleep(50 * time.Millisecond)
	_, err := rawDo(ctx, c, "POST", "/1.0/x", "", nil, map[string]any{})
	if err == nil {
		t.Fatal("a POST not marked replayable was sent again on a new connection")
	}

	if posts.Load() != 2 {
		t.Fatalf("%d posts arrived, want 2", posts.Load())
	}
}

// TestChecksClientDeadline: an answer that does not come within the request's context is
// an error at the deadline, and its connection is not used again (its answer may still
// arrive on it).
func TestChecksClientDeadline(t *testing.T) {
	release := make(chan struct{})
	s := newChecksServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/slow") {
			<-release
		}

		_, _ = io.WriteString(w, `{"type":"sync","status":"Success","status_code":200,"metadata":{}}`)
	}))

	defer close(release)
	c := s.client()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := rawDo(ctx, c, "GET", "/1.0/slow", "", nil, nil)
	if err == nil {
		t.Fatal("no error past the deadline")
	}

	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the deadline was not kept: %v", took)
	}

	_, err = rawDo(context.Background(), c, "GET", "/1.0/fast", "", nil, nil)
	if err != nil {
		t.Fatal(err)
	}

	if got := s.accepted.Load(); got != 2 {
		t.Fatalf("%d connections, want 2 (the timed-out one closed)", got)
	}
}

// TestChecksClientCancel: the daemon stopping (the context's end, without a deadline) cuts
// a long poll short.
func TestChecksClientCancel(t *testing.T) {
	release := make(chan struct{})
	s := newChecksServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
	}))

	defer close(release)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(100*time.Millisecond, cancel)
	_, err := rawDo(ctx, s.client(), "GET", "/1.0/operations/x/wait", "", nil, nil)
	if err == nil {
		t.Fatal("no error after the context ended")
	}
}

// TestChecksClientUnreadRest: an answer whose rest is longer than closing drains closes its
// connection rather than leave the rest in front of the next answer.
func TestChecksClientUnreadRest(t *testing.T) {
	s := newChecksServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 2*checkBodyDrain))
	}))

	c := s.client()
	for range 2 {
		req, _ := http.NewRequest("GET", rawBase+"/1.0/big", nil)
		resp, err := c.DoHTTP(req)
		if err != nil {
			t.Fatal(err)
		}

		buf := make([]byte, 10)
		_, _ = io.ReadFull(resp.Body, buf)
		_ = resp.Body.Close()
	}

	if got := s.accepted.Load(); got != 2 {
		t.Fatalf("%d connections, want 2", got)
	}
}

// deadlineOnly is a context whose deadline has passed before its timer marked it done, as
// a connection's deadline can fail a read a moment before the context's own timer fires.
type deadlineOnly struct {
	context.Context
	deadline time.Time
}

func (d deadlineOnly) Deadline() (time.Time, bool) { return d.deadline, true }

// TestExpired: a check whose deadline has passed is expired even before its context says
// so, or its timed-out process would never be killed (TestAutohealing's timed-out check
// in CI, where the read's "i/o timeout" won the race with the context's timer).
func TestExpired(t *testing.T) {
	past := deadlineOnly{Context: context.Background(), deadline: time.Now().Add(-time.Millisecond)}
	if past.Err() != nil || !Expired(past) {
		t.Fatal("a context past its deadline, not yet marked done, is not expired")
	}

	future := deadlineOnly{Context: context.Background(), deadline: time.Now().Add(time.Hour)}
	if Expired(future) || Expired(context.Background()) {
		t.Fatal("a context before its deadline, or without one, is expired")
	}

	done, cancel := context.WithCancel(context.Background())
	cancel()
	if !Expired(done) {
		t.Fatal("an ended context is not expired")
	}
}
