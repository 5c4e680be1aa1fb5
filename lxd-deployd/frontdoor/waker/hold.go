// Package waker holds the first connections of a shape that has no serving instance (a
// shape scaled to zero, doc/traffic.md "Scale to zero"): the front door sends them here
// only when it has no instance up (a backup server), the waker asks for capacity at the
// first one and hands each held connection to an instance once one serves. The queue is
// bounded by its settings: at most Max connections wait, each at most Timeout; beyond
// them a connection is refused clearly (http: a 503 naming the limit, with Retry-After;
// tcp: closed). A held connection costs its socket and its request's headers: the body
// is not read until an instance takes it.
package waker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Config is one shape's hold.
type Config struct {
	// Key names the shape ("project/deployment/shape") in logs and refusals.
	Key string
	// Protocol is "http" or "tcp".
	Protocol string
	// Max is how many connections may wait at once; Timeout how long each may wait.
	Max     int
	Timeout time.Duration
	// Wake is called, in its own goroutine, when a connection is held while the shape has
	// no target and no wake is outstanding, with how many connections wait then. A wake
	// is outstanding until a target appears or every held connection has gone.
	Wake func(waiting int)
	// Waiting is called every PollEvery while connections wait and there is no target (the
	// daemon looks at its instances sooner than its usual round); may be nil.
	Waiting   func()
	PollEvery time.Duration
	Logger    *slog.Logger
}

// Refusals, as errors.
var (
	// ErrFull: Max connections wait already.
	ErrFull = errors.New("hold queue full")
	// ErrTimeout: no instance served within Timeout.
	ErrTimeout = errors.New("hold timed out")
)

// retryAfter is what a refusal's Retry-After says, in seconds: about a wake's length.
const retryAfter = "5"

// dialRetry is how long a connection to a target that refused waits before another try
// (an instance just marked serving whose server is still starting).
const dialRetry = 50 * time.Millisecond

// Hold is one shape's holding listener.
type Hold struct {
	cfg Config
	ln  net.Listener
	srv *http.Server

	mu      sync.Mutex
	max     int
	timeout time.Duration
	targets []string
	next    int
	// ready is closed when targets become non-empty, and replaced when they empty.
	ready   chan struct{}
	pending int
	woken   bool
	refused map[error]int
	closed  bool
	done    chan struct{}
}

// Listen opens a hold on addr ("127.0.0.1:0" for any port).
func Listen(addr string, c Config) (*Hold, error) {
	if c.Protocol != "http" && c.Protocol != "tcp" {
		return nil, fmt.Errorf("hold %s: protocol %q: use http or tcp", c.Key, c.Protocol)
	}

	if c.Logger == nil {
		c.Logger = slog.Default()
	}

	if c.PollEvery <= 0 {
		c.PollEvery = 100 * time.Millisecond
	}

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("hold %s: listen on %s: %w", c.Key, addr, err)
	}

	h := &Hold{cfg: c, ln: ln, ready: make(chan struct{}), refused: map[error]int{}, done: make(chan struct{})}
	h.SetLimits(c.Max, c.Timeout)
	if c.Protocol == "http" {
		h.srv = &http.Server{
			Handler:           http.HandlerFunc(h.serveHTTP),
			ReadHeaderTimeout: 10 * time.Second,
			// HAProxy's own buffer (tune.bufsize, 16 kB) bounds what reaches here anyway.
			MaxHeaderBytes: maxHeaderBytes,
			IdleTimeout:    10 * time.Second,
			ErrorLog:       nil,
		}
		go func() { _ = h.srv.Serve(ln) }()
	} else {
		go h.acceptTCP()
	}

	go h.poll()
	return h, nil
}

// maxHeaderBytes bounds one held request's headers.
const maxHeaderBytes = 32 << 10

// Addr is where the hold listens (host:port).
func (h *Hold) Addr() string {
	return h.ln.Addr().String()
}

// SetLimits changes Max and Timeout (a shape's traffic changed); held connections keep
// the timeout they started with.
func (h *Hold) SetLimits(max int, timeout time.Duration) {
	if max < 1 {
		max = 1
	}

	if timeout <= 0 {
		timeout = 30 * time.Second
	}

	h.mu.Lock()
	h.max, h.timeout = max, timeout
	h.mu.Unlock()
}

// SetTargets sets the addresses (host:port) of the shape's serving instances; held
// connections go to them, round robin.
func (h *Hold) SetTargets(targets []string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	had := len(h.targets) > 0
	h.targets = append([]string(nil), targets...)
	switch {
	case !had && len(targets) > 0:
		close(h.ready)
		h.woken = false
	case had && len(targets) == 0:
		h.ready = make(chan struct{})
	}
}

// Pending is how many connections wait now.
func (h *Hold) Pending() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pending
}

// Refused is how many connections were refused, by ErrFull and ErrTimeout.
func (h *Hold) Refused() map[error]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[error]int{}
	for k, v := range h.refused {
		out[k] = v
	}

	return out
}

// Close stops listening and refuses the connections that wait.
func (h *Hold) Close() {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return
	}

	h.closed = true
	close(h.done)
	h.mu.Unlock()
	_ = h.ln.Close()
	if h.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = h.srv.Shutdown(ctx)
		cancel()
		_ = h.srv.Close()
	}
}

// pick returns the next target, "" when there is none; h.mu is held.
func (h *Hold) pick() string {
	if len(h.targets) == 0 {
		return ""
	}

	h.next = (h.next + 1) % len(h.targets)
	return h.targets[h.next]
}

// connect waits, counted among the pending, until a target serves, and returns a
// connection to it; ErrFull at once when Max wait already, ErrTimeout after Timeout.
func (h *Hold) connect(ctx context.Context) (net.Conn, error) {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return nil, ErrTimeout
	}

	if h.pending >= h.max {
		h.refused[ErrFull]++
		h.mu.Unlock()
		return nil, ErrFull
	}

	h.pending++
	wake := len(h.targets) == 0 && !h.woken
	if wake {
		h.woken = true
	}

	deadline := time.Now().Add(h.timeout)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.pending--
		if h.pending == 0 && len(h.targets) == 0 {
			// Every held connection went without an instance: the next one asks again.
			h.woken = false
		}

		h.mu.Unlock()
	}()

	if wake && h.cfg.Wake != nil {
		go func() { h.cfg.Wake(h.Pending()) }()
	}

	parent := ctx
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	for {
		h.mu.Lock()
		ready, target := h.ready, h.pick()
		h.mu.Unlock()
		if target != "" {
			var d net.Dialer
			dialCtx, cancelDial := context.WithTimeout(ctx, 2*time.Second)
			conn, err := d.DialContext(dialCtx, "tcp", target)
			cancelDial()
			if err == nil {
				return conn, nil
			}

			h.cfg.Logger.Debug("hold: target refused, trying again", "shape", h.cfg.Key, "target", target, "err", err)
			ready = nil // wait a little, then look at the targets again
		}

		var retry <-chan time.Time
		if ready == nil {
			retry = time.After(dialRetry)
		}

		select {
		case <-ready:
		case <-retry:
		case <-h.done:
			return nil, h.refuse(ErrTimeout)
		case <-ctx.Done():
			if parent.Err() != nil {
				return nil, parent.Err() // the client went
			}

			return nil, h.refuse(ErrTimeout)
		}
	}
}

func (h *Hold) refuse(err error) error {
	h.mu.Lock()
	h.refused[err]++
	h.mu.Unlock()
	return err
}

// poll calls Waiting while connections wait for a first target.
func (h *Hold) poll() {
	if h.cfg.Waiting == nil {
		return
	}

	t := time.NewTicker(h.cfg.PollEvery)
	defer t.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-t.C:
			h.mu.Lock()
			waiting := h.pending > 0 && len(h.targets) == 0
			h.mu.Unlock()
			if waiting {
				h.cfg.Waiting()
			}
		}
	}
}
