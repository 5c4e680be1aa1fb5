package waker

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// wakes records the wake calls of a hold.
type wakes struct {
	n       atomic.Int64
	waiting atomic.Int64
}

func (w *wakes) wake(waiting int) {
	w.n.Add(1)
	w.waiting.Store(int64(waiting))
}

func listenHold(t *testing.T, c Config) *Hold {
	t.Helper()
	h, err := Listen("127.0.0.1:0", c)
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(h.Close)
	return h
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}

		time.Sleep(5 * time.Millisecond)
	}
}

func get(h *Hold) (int, string, http.Header, error) {
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Get("http://" + h.Addr() + "/path?q=1")
	if err != nil {
		return 0, "", nil, err
	}

	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), resp.Header, err
}

// TestHoldHandsOff: requests that arrive while no instance serves wait, one wake asks for
// capacity with the count of those waiting, and each goes to the instance once it serves.
func TestHoldHandsOff(t *testing.T) {
	var w wakes
	h := listenHold(t, Config{Key: "p/d/web", Protocol: "http", Max: 10, Timeout: 10 * time.Second, Wake: w.wake})
	const n = 8
	type result struct {
		code int
		body string
		err  error
	}

	results := make(chan result, n)
	for i := 0; i < n; i++ {
		go func() {
			code, body, _, err := get(h)
			results <- result{code, body, err}
		}()
	}

	waitFor(t, "every request held", func() bool { return h.Pending() == n })
	if w.n.Load() != 1 || w.waiting.Load() < 1 {
		t.Fatalf("wakes %d (waiting %d): want one wake", w.n.Load(), w.waiting.Load())
	}

	instance := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(rw, "served %s %s", r.URL.RequestURI(), r.Host)
	}))
	defer instance.Close()
	h.SetTargets([]string{strings.TrimPrefix(instance.URL, "http://")})
	for i := 0; i < n; i++ {
		r := <-results
		if r.err != nil || r.code != 200 || !strings.HasPrefix(r.body, "served /path?q=1 "+h.Addr()) {
			t.Fatalf("held request: %d %q %v", r.code, r.body, r.err)
		}
	}

	if h.Pending() != 0 || w.n.Load() != 1 {
		t.Fatalf("pending %d, wakes %d after the handoff", h.Pending(), w.n.Load())
	}

	// With a target, a request is not held and asks for nothing.
	code, body, _, err := get(h)
	if err != nil || code != 200 || !strings.HasPrefix(body, "served") || w.n.Load() != 1 {
		t.Fatalf("direct: %d %q %v, wakes %d", code, body, err, w.n.Load())
	}
}

// TestHoldFull: one request more than hold_max is refused at once with a 503 that names
// the limit and says when to retry; the held ones are not disturbed.
func TestHoldFull(t *testing.T) {
	var w wakes
	h := listenHold(t, Config{Key: "p/d/web", Protocol: "http", Max: 2, Timeout: 10 * time.Second, Wake: w.wake})
	for i := 0; i < 2; i++ {
		go func() { _, _, _, _ = get(h) }()
	}

	waitFor(t, "two held", func() bool { return h.Pending() == 2 })
	code, body, header, err := get(h)
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "traffic.hold_max 2") || header.Get("Retry-After") == "" {
		t.Fatalf("over hold_max: %d %q %v %v", code, body, header, err)
	}

	if h.Refused()[ErrFull] != 1 || h.Pending() != 2 {
		t.Fatalf("refused %v, pending %d", h.Refused(), h.Pending())
	}
}

// TestHoldTimeout: a request that waits longer than hold_timeout is refused with a 503
// naming the limit; once every held request has gone, the next one wakes again.
func TestHoldTimeout(t *testing.T) {
	var w wakes
	h := listenHold(t, Config{Key: "p/d/web", Protocol: "http", Max: 5, Timeout: 10 * time.Second, Wake: w.wake})
	h.SetLimits(5, 200*time.Millisecond)
	start := time.Now()
	code, body, header, err := get(h)
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "traffic.hold_timeout") || header.Get("Retry-After") == "" {
		t.Fatalf("past hold_timeout: %d %q %v", code, body, err)
	}

	if time.Since(start) < 200*time.Millisecond {
		t.Fatalf("refused after %v, before the hold timeout", time.Since(start))
	}

	waitFor(t, "the hold empty", func() bool { return h.Pending() == 0 })
	_, _, _, _ = get(h)
	if w.n.Load() != 2 || h.Refused()[ErrTimeout] != 2 {
		t.Fatalf("wakes %d, refused %v: want a wake for each episode", w.n.Load(), h.Refused())
	}
}

// TestHoldTCP: a tcp connection waits unread, then is spliced to the instance; one over
// hold_max is closed.
func TestHoldTCP(t *testing.T) {
	var w wakes
	h := listenHold(t, Config{Key: "p/d/db", Protocol: "tcp", Max: 1, Timeout: 10 * time.Second, Wake: w.wake})
	c, err := net.Dial("tcp", h.Addr())
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = c.Close() }()
	_, _ = c.Write([]byte("hello\n"))
	waitFor(t, "held", func() bool { return h.Pending() == 1 })
	over, err := net.Dial("tcp", h.Addr())
	if err != nil {
		t.Fatal(err)
	}

	_ = over.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := over.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("over hold_max: read %d %v, want EOF", n, err)
	}

	echo, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = echo.Close() }()
	go func() {
		s, err := echo.Accept()
		if err == nil {
			_, _ = io.Copy(s, s)
			_ = s.Close()
		}
	}()
	h.SetTargets([]string{echo.Addr().String()})
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "hello\n" {
		t.Fatalf("spliced: %q %v", line, err)
	}
}

// TestHoldMemoryBounded: hold_max requests, each with a 16 MB body on its way, cost the
// daemon their sockets and headers, not their bodies; more are refused.
func TestHoldMemoryBounded(t *testing.T) {
	const max = 50
	h := listenHold(t, Config{Key: "p/d/web", Protocol: "http", Max: max, Timeout: 30 * time.Second})
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	chunk := make([]byte, 64<<10)
	var sent atomic.Int64
	var wg sync.WaitGroup
	var conns []net.Conn
	var mu sync.Mutex
	for i := 0; i < max; i++ {
		c, err := net.Dial("tcp", h.Addr())
		if err != nil {
			t.Fatal(err)
		}

		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			fmt.Fprintf(c, "POST /upload HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n", 16<<20)
			// Write until the socket takes no more: the hold does not read the body.
			_ = c.SetWriteDeadline(time.Now().Add(2 * time.Second))
			for {
				n, err := c.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		}()
	}

	wg.Wait()
	waitFor(t, "every request held", func() bool { return h.Pending() == max })
	code, body, _, err := get(h)
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "traffic.hold_max") {
		t.Fatalf("over hold_max: %d %q %v", code, body, err)
	}

	var after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int64(after.HeapInuse) - int64(before.HeapInuse)
	// Per held request: its connection's buffers (4 kB read, 4 kB write), the parsed
	// request and two goroutines; 64 kB each is generous, and far below what was sent.
	bound := int64(max * 64 << 10)
	t.Logf("%d held requests sent %d MB of body the hold did not read; the heap grew %d kB (bound %d kB)", max, sent.Load()>>20, grown>>10, bound>>10)
	if grown > bound {
		t.Fatalf("the heap grew %d kB holding %d requests: more than %d kB", grown>>10, max, bound>>10)
	}

	if sent.Load() < 2*bound {
		t.Fatalf("only %d bytes of body were sent: the test shows nothing", sent.Load())
	}

	for _, c := range conns {
		_ = c.Close()
	}
}

// TestSetSync: holds come and go with the specs; each listens on a port of its own.
func TestSetSync(t *testing.T) {
	var mu sync.Mutex
	woken := map[string]int{}
	s := NewSet(SetConfig{Wake: func(key string, waiting int) {
		mu.Lock()
		woken[key] += waiting
		mu.Unlock()
	}})
	defer s.Close()
	addrs := s.Sync([]Spec{{Key: "p/d/a", Protocol: "http", Max: 1, Timeout: time.Second}, {Key: "p/d/b", Protocol: "tcp", Max: 1, Timeout: time.Second}})
	if len(addrs) != 2 || addrs["p/d/a"] == addrs["p/d/b"] {
		t.Fatalf("addresses %v", addrs)
	}

	go func() {
		c, err := net.Dial("tcp", addrs["p/d/b"])
		if err == nil {
			defer func() { _ = c.Close() }()
			_, _ = c.Read(make([]byte, 1))
		}
	}()
	waitFor(t, "a wake of p/d/b", func() bool { mu.Lock(); defer mu.Unlock(); return woken["p/d/b"] == 1 })
	again := s.Sync([]Spec{{Key: "p/d/a", Protocol: "http", Max: 1, Timeout: time.Second}})
	if len(again) != 1 || again["p/d/a"] != addrs["p/d/a"] {
		t.Fatalf("after dropping b: %v (a must keep its address)", again)
	}

	if _, err := net.Dial("tcp", addrs["p/d/b"]); err == nil {
		t.Fatalf("the hold of a dropped shape still listens")
	}
}
