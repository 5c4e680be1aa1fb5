package backend

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// checksIdleConns is how many idle connections the checks' client keeps to LXD: one per
// check that may run at once (health.Checker's concurrency) and some to spare.
const checksIdleConns = 32

// ChecksClient returns the client the health checks reach LXD with: the same socket as
// connected, over connections kept alive between requests, each request written and its
// answer read by the goroutine that sends it. LXD's client opens a connection per request
// (it turns keep-alives off), and Go's transport hands each request to two goroutines of
// its connection: at 100 exec checks a second, the dials were a fifth of the daemon's CPU
// and the handoffs another tenth (BenchmarkExecCheckCapacity's profiles).
func (l *LXD) ChecksClient() (DoHTTPer, error) {
	_, err := l.connected()
	if err != nil {
		return nil, err
	}

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.checks == nil {
		l.checks = &checksClient{dial: func(ctx context.Context) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", l.socketPath())
		}}
	}

	return l.checks, nil
}

// socketPath is the socket connected uses, found as LXD's client finds it when none
// was given.
func (l *LXD) socketPath() string {
	switch {
	case l.socket != "":
		return l.socket
	case os.Getenv("LXD_SOCKET") != "":
		return os.Getenv("LXD_SOCKET")
	case os.Getenv("LXD_DIR") != "":
		return filepath.Join(os.Getenv("LXD_DIR"), "unix.socket")
	}

	_, err := os.Stat("/var/snap/lxd/common/lxd/unix.socket")
	if err == nil {
		return "/var/snap/lxd/common/lxd/unix.socket"
	}

	return "/var/lib/lxd/unix.socket"
}

// checksClient is a small HTTP/1.1 client for one server over kept-alive connections.
type checksClient struct {
	dial func(ctx context.Context) (net.Conn, error)

	mu   sync.Mutex
	idle []*checksConn
}

type checksConn struct {
	conn   net.Conn
	reader *bufio.Reader
	writer *bufio.Writer // req.Write wraps a plain writer in a new 4 KiB buffer per request
}

// DoHTTP sends req and reads the answer's head; closing the body gives the connection back.
// A request that fails on a connection used before (LXD closed it meanwhile: it restarted,
// say) is sent once more on a new connection when that is safe: a GET, or a request marked
// so (replayable). The other idle connections are dropped with it, as likely closed too.
func (c *checksClient) DoHTTP(req *http.Request) (*http.Response, error) {
	conn, reused, err := c.get(req.Context())
	if err != nil {
		return nil, err
	}

	resp, err := conn.roundTrip(req)
	if err == nil || !reused {
		return c.answer(conn, resp, err)
	}

	_ = conn.conn.Close()
	var netErr net.Error
	if req.Context().Err() != nil || (errors.As(err, &netErr) && netErr.Timeout()) || !resendable(req) {
		return nil, err
	}

	c.dropIdle()
	if req.GetBody != nil {
		req.Body, err = req.GetBody()
		if err != nil {
			return nil, err
		}
	}

	conn, _, err = c.get(req.Context())
	if err != nil {
		return nil, err
	}

	resp, err = conn.roundTrip(req)
	return c.answer(conn, resp, err)
}

// answer hands out a response whose body gives the connection back when closed, or closes
// the connection of a failed request.
func (c *checksClient) answer(conn *checksConn, resp *http.Response, err error) (*http.Response, error) {
	if err != nil {
		_ = conn.conn.Close()
		return nil, err
	}

	resp.Body = &checksBody{ReadCloser: resp.Body, client: c, conn: conn, keep: !resp.Close}
	return resp, nil
}

// dropIdle closes every idle connection.
func (c *checksClient) dropIdle() {
	c.mu.Lock()
	idle := c.idle
	c.idle = nil
	c.mu.Unlock()
	for _, conn := range idle {
		_ = conn.conn.Close()
	}
}

// resendable says whether a request may be sent twice.
func resendable(req *http.Request) bool {
	_, marked := req.Header["X-Idempotency-Key"]
	return req.Method == http.MethodGet || marked
}

// get takes an idle connection, or dials a new one.
func (c *checksClient) get(ctx context.Context) (*checksConn, bool, error) {
	c.mu.Lock()
	if n := len(c.idle); n > 0 {
		conn := c.idle[n-1]
		c.idle = c.idle[:n-1]
		c.mu.Unlock()
		return conn, true, nil
	}

	c.mu.Unlock()
	conn, err := c.dial(ctx)
	if err != nil {
		return nil, false, err
	}

	return &checksConn{conn: conn, reader: bufio.NewReader(conn), writer: bufio.NewWriter(conn)}, false, nil
}

// put keeps a connection whose last answer was read whole, or closes it.
func (c *checksClient) put(conn *checksConn) {
	c.mu.Lock()
	if len(c.idle) < checksIdleConns {
		c.idle = append(c.idle, conn)
		conn = nil
	}

	c.mu.Unlock()
	if conn != nil {
		_ = conn.conn.Close()
	}
}

// roundTrip writes req and reads the answer's head within req's context: its deadline is the
// connection's, and its end (the daemon stopping) cuts the connection short.
func (cc *checksConn) roundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	deadline, _ := ctx.Deadline()
	err := cc.conn.SetDeadline(deadline)
	if err != nil {
		return nil, err
	}

	stop := context.AfterFunc(ctx, func() { _ = cc.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	err = req.Write(cc.writer)
	if err == nil {
		err = cc.writer.Flush()
	}

	if err != nil {
		return nil, err
	}

	resp, err := http.ReadResponse(cc.reader, req)
	if err != nil {
		return nil, err
	}

	if ctx.Err() != nil {
		_ = resp.Body.Close()
		return nil, ctx.Err()
	}

	return resp, nil
}

// checkBodyDrain is how much of an answer's unread rest closing its body reads to keep the
// connection; a longer rest closes it.
const checkBodyDrain = 64 << 10

// checksBody gives the connection back once its answer is read whole.
type checksBody struct {
	io.ReadCloser
	client *checksClient
	conn   *checksConn
	keep   bool
	closed bool
}

func (b *checksBody) Close() error {
	if b.closed {
		return nil
	}

	b.closed = true
	n, err := io.Copy(io.Discard, io.LimitReader(b.ReadCloser, checkBodyDrain+1))
	_ = b.ReadCloser.Close()
	if b.keep && err == nil && n <= checkBodyDrain && b.conn.reader.Buffered() == 0 {
		_ = b.conn.conn.SetDeadline(time.Time{})
		b.client.put(b.conn)
		return nil
	}

	return b.conn.conn.Close()
}
