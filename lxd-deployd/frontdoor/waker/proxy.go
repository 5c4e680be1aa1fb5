package waker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"time"
)

// serveHTTP holds one request until an instance serves, then proxies it there over a
// connection of its own (no keep-alive to the instance: a held request must not pin a
// pooled connection that a drain would not see). The body is streamed, never buffered.
func (h *Hold) serveHTTP(w http.ResponseWriter, r *http.Request) {
	conn, err := h.connect(r.Context())
	if err != nil {
		h.refuseHTTP(w, err)
		return
	}

	var once sync.Once
	transport := &http.Transport{
		DialContext: func(ctx context.Context, network string, addr string) (net.Conn, error) {
			var c net.Conn
			once.Do(func() { c = conn })
			if c == nil {
				return nil, errors.New("the held request's connection was used already")
			}

			return c, nil
		},
		DisableKeepAlives:     true,
		ResponseHeaderTimeout: 0,
	}
	defer transport.CloseIdleConnections()
	target := &url.URL{Scheme: "http", Host: conn.RemoteAddr().String()}
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			pr.Out.Host = pr.In.Host
		},
		Transport: transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			h.cfg.Logger.Warn("hold: proxy a held request", "shape", h.cfg.Key, "target", target.Host, "err", err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	proxy.ServeHTTP(w, r)
	once.Do(func() { _ = conn.Close() }) // not used (the request failed before its dial)
}

// refuseHTTP answers a request the hold will not keep: 503 with Retry-After and a body
// that names the limit.
func (h *Hold) refuseHTTP(w http.ResponseWriter, err error) {
	h.mu.Lock()
	max, timeout := h.max, h.timeout
	h.mu.Unlock()
	var msg string
	switch {
	case errors.Is(err, ErrFull):
		msg = fmt.Sprintf("shape %s has no serving instance yet and %d requests wait for one already (traffic.hold_max %d): retry later\n", h.cfg.Key, max, max)
	case errors.Is(err, ErrTimeout):
		msg = fmt.Sprintf("shape %s had no serving instance within %s (traffic.hold_timeout): retry later\n", h.cfg.Key, timeout)
	default:
		return // the client went
	}

	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Retry-After", retryAfter)
	w.Header().Set("Connection", "close")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = io.WriteString(w, msg)
}

// acceptTCP holds each connection until an instance serves and then splices it there;
// a refused one is closed.
func (h *Hold) acceptTCP() {
	for {
		c, err := h.ln.Accept()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}

			return
		}

		go h.serveTCP(c)
	}
}

func (h *Hold) serveTCP(client net.Conn) {
	defer func() { _ = client.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-h.done:
			cancel()
		case <-ctx.Done():
		}
	}()

	server, err := h.connect(ctx)
	if err != nil {
		return
	}

	defer func() { _ = server.Close() }()
	splice(client, server)
}

// splice copies both ways until both directions end, passing on each half-close.
func splice(a net.Conn, b net.Conn) {
	var wg sync.WaitGroup
	wg.Add(2)
	one := func(dst net.Conn, src net.Conn) {
		defer wg.Done()
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		} else {
			_ = dst.Close()
		}
	}

	go one(a, b)
	go one(b, a)
	wg.Wait()
}
