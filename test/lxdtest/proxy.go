package lxdtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy is a "slow LXD": a unix socket in front of an LXD's unix.socket that passes every
// call through (long polls, the events websocket and exec's websockets included) unless
// told to delay calls or fail them. Point the daemon under test at [Proxy.Socket]
// (lxd-deployd --lxd-socket) and the test's own LXD client at the LXD itself.
type Proxy struct {
	Socket   string // where the daemon under test connects
	Upstream string // the LXD's own unix.socket

	mu     sync.Mutex
	faults ProxyFaults
	rng    *rand.Rand

	calls  atomic.Int64 // calls seen
	failed atomic.Int64 // calls answered 500 by the proxy
	slowed atomic.Int64 // calls delayed

	server  *http.Server
	waiters []proxyWaiter
}

// proxyWaiter is a [Proxy.WaitFor] waiting for a call.
type proxyWaiter struct {
	method, path string
	passed       chan struct{}
}

// ProxyFaults says what the proxy does to calls; the zero value passes everything through.
type ProxyFaults struct {
	// Delay is added before a call is passed on (or failed), plus up to Jitter more.
	Delay  time.Duration
	Jitter time.Duration

	// FailShare of the calls (0..1) are answered HTTP 500 in LXD's error envelope instead
	// of being passed on. The events websocket is never failed (a daemon sees a lost event
	// stream through [Proxy.Restart]-like faults of LXD itself).
	FailShare float64

	// ExecFails answers 500 to every POST .../instances/{name}/exec: exec fails to start
	// while the rest of LXD answers.
	ExecFails bool

	// WaitFails answers 500 to every GET /1.0/operations/{id}/wait: the operations go on in
	// LXD while their waits fail (a client learns nothing of how they end).
	WaitFails bool
}

// StartProxy starts a proxy in front of upstream (an LXD's unix.socket) on a socket of its
// own, and stops it when the test ends. The seed makes which calls fail repeatable as far
// as the calls themselves are (their order depends on timing).
func StartProxy(t testing.TB, upstream string, seed int64) *Proxy {
	t.Helper()
	dir, err := os.MkdirTemp("/tmp", "lxdp-")
	if err != nil {
		t.Fatalf("lxdtest: %v", err)
	}

	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	// The daemon under test may run under another umask; the socket must stay reachable.
	if err := os.Chmod(dir, 0o711); err != nil {
		t.Fatalf("lxdtest: %v", err)
	}

	p := &Proxy{Socket: filepath.Join(dir, "unix.socket"), Upstream: upstream, rng: rand.New(rand.NewSource(seed))}
	listener, err := net.Listen("unix", p.Socket)
	if err != nil {
		t.Fatalf("lxdtest: proxy listen: %v", err)
	}

	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", upstream)
		},
		MaxIdleConnsPerHost: 64,
	}

	reverse := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.Out.URL.Scheme = "http"
			r.Out.URL.Host = "unix.socket"
			r.Out.Host = r.In.Host
		},
		Transport:     transport,
		FlushInterval: -1, // long polls and streams pass at once
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			// LXD itself is gone (stopped or restarting): what a client connecting to its
			// socket would see is a refused connection, so close this one without an answer.
			if hj, ok := w.(http.Hijacker); ok {
				if conn, _, herr := hj.Hijack(); herr == nil {
					_ = conn.Close()
					return
				}
			}

			lxdError(w, http.StatusBadGateway, "lxdtest proxy: "+err.Error())
		},
	}

	p.server = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.serve(w, r, reverse)
	})}
	go func() { _ = p.server.Serve(listener) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = p.server.Shutdown(ctx)
		_ = p.server.Close()
		transport.CloseIdleConnections()
	})

	return p
}

// Set replaces the faults the proxy applies from now on; Set(ProxyFaults{}) ends them.
func (p *Proxy) Set(f ProxyFaults) {
	p.mu.Lock()
	p.faults = f
	p.mu.Unlock()
}

// Faults returns the faults in force.
func (p *Proxy) Faults() ProxyFaults {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.faults
}

// Counts says how many calls the proxy saw, answered 500 itself, and delayed.
func (p *Proxy) Counts() (calls int64, failed int64, slowed int64) {
	return p.calls.Load(), p.failed.Load(), p.slowed.Load()
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request, reverse *httputil.ReverseProxy) {
	p.calls.Add(1)
	p.mu.Lock()
	f := p.faults
	delay := f.Delay
	if f.Jitter > 0 {
		delay += time.Duration(p.rng.Int63n(int64(f.Jitter)))
	}

	events := strings.HasSuffix(r.URL.Path, "/events")
	fail := !events && f.FailShare > 0 && p.rng.Float64() < f.FailShare
	p.mu.Unlock()
	if r.Method == http.MethodPost && isExec(r.URL.Path) && f.ExecFails {
		fail = true
	}

	if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/1.0/operations/") && strings.HasSuffix(r.URL.Path, "/wait") && f.WaitFails {
		fail = true
	}

	if delay > 0 {
		p.slowed.Add(1)
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
	}

	if fail {
		p.failed.Add(1)
		lxdError(w, http.StatusInternalServerError, fmt.Sprintf("lxdtest proxy: injected failure of %s %s", r.Method, r.URL.Path))
		return
	}

	reverse.ServeHTTP(w, r)
	p.passed(r)
}

// WaitFor waits until a call of method on path has passed through the proxy and been
// answered, and reports whether one did within timeout. A test injects a fault at the
// worst moment with it: LXD stopped right after the daemon's probe (GET /1.0) found it
// answering, the daemon believes LXD is there until its next probe.
func (p *Proxy) WaitFor(method string, path string, timeout time.Duration) bool {
	select {
	case <-p.Next(method, path):
		return true
	case <-time.After(timeout):
		return false
	}
}

// Next returns a channel closed when the next call of method on path has passed through
// the proxy and been answered (a call the test itself is about to make: ask first).
func (p *Proxy) Next(method string, path string) <-chan struct{} {
	w := proxyWaiter{method: method, path: path, passed: make(chan struct{})}
	p.mu.Lock()
	p.waiters = append(p.waiters, w)
	p.mu.Unlock()
	return w.passed
}

// passed wakes the waiters for r's method and path.
func (p *Proxy) passed(r *http.Request) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := p.waiters[:0]
	for _, w := range p.waiters {
		if w.method == r.Method && w.path == r.URL.Path {
			close(w.passed)
			continue
		}

		kept = append(kept, w)
	}

	p.waiters = kept
}

// isExec reports whether path is an instance's exec endpoint (/1.0/instances/NAME/exec,
// or the older /1.0/containers/NAME/exec).
func isExec(path string) bool {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	return len(parts) == 4 && parts[0] == "1.0" && (parts[1] == "instances" || parts[1] == "containers") && parts[3] == "exec"
}

// lxdError answers as LXD does on an error: its JSON envelope with the status code.
func lxdError(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(map[string]any{
		"type":        "error",
		"status":      "",
		"status_code": 0,
		"operation":   "",
		"error_code":  code,
		"error":       message,
		"metadata":    nil,
	})
}
