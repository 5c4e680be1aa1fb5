package db

import (
	"errors"
	"net"
	"testing"
	"time"
)

// A read on a watched connection to a leader that stopped answering gives up within its
// bound, as a network timeout (which go-dqlite turns into driver.ErrBadConn, dropping the
// connection from the pool); a sooner deadline of the caller's own still applies, and an
// answer that comes is read.
func TestWatchedConnGivesUpOnASilentLeader(t *testing.T) {
	client, server := net.Pipe()
	defer func() { _ = server.Close() }()
	conn := &watchedConn{Conn: client, within: 200 * time.Millisecond}

	start := time.Now()
	_, err := conn.Read(make([]byte, 1))
	var netErr net.Error
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("want a timeout from a silent peer, got %v", err)
	}

	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the read waited %v", took)
	}

	_ = conn.SetDeadline(time.Now().Add(20 * time.Millisecond))
	start = time.Now()
	_, err = conn.Read(make([]byte, 1))
	if !errors.As(err, &netErr) || !netErr.Timeout() {
		t.Fatalf("want the caller's deadline to end the read, got %v", err)
	}

	_ = conn.SetDeadline(time.Time{})
	go func() { _, _ = server.Write([]byte("x")) }()
	b := make([]byte, 1)
	n, err := conn.Read(b)
	if err != nil || n != 1 || b[0] != 'x' {
		t.Fatalf("want the answer read, got %d %q %v", n, b[:n], err)
	}
}
