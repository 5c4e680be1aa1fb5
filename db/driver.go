package db

import (
	"context"
	"crypto/tls"
	"database/sql"
	"fmt"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/canonical/go-dqlite/client"
	"github.com/canonical/go-dqlite/driver"
)

// answerWithin bounds how long the daemon waits for any one answer of the dqlite leader
// before it gives the connection up. go-dqlite sends COMMIT and ROLLBACK with no deadline
// and database/sql hands it requests whose contexts carry none, so a connection to a
// leader cut off by a partition (no reset, no answer) held the transactions on it for the
// cut's length: writes through the connected members stalled 15-27 s while another member
// had taken over within 9 (issue 31, TestFailSafeDaemonPartition). A connection that
// times out is broken to database/sql (driver.ErrBadConn) and leaves the pool, so the
// retried transaction finds the new leader; a slow but live leader costs a retry, which
// the commit markers keep safe.
const answerWithin = 5 * time.Second

// driverIndex numbers the drivers registered with database/sql (one per opened node).
var driverIndex atomic.Int64

// openSQL opens the database through a driver of ours rather than the app's: the same
// leader search and TLS, with every connection watched (watchedConn).
func openSQL(ctx context.Context, dir string, dialTLS *tls.Config, log client.LogFunc) (*sql.DB, error) {
	dial := client.DefaultDialFunc
	if dialTLS != nil {
		dial = client.DialFuncWithTLS(dial, dialTLS)
	}

	drv, err := driver.New(&fileNodeStore{path: filepath.Join(dir, "cluster.yaml")}, driver.WithDialFunc(watchedDial(dial, answerWithin)), driver.WithLogFunc(log))
	if err != nil {
		return nil, fmt.Errorf("create dqlite driver: %w", err)
	}

	name := fmt.Sprintf("lxd-deployd-dqlite-%d", driverIndex.Add(1))
	sql.Register(name, drv)
	sqlDB, err := sql.Open(name, databaseName)
	if err != nil {
		return nil, err
	}

	for range 60 {
		err = sqlDB.PingContext(ctx)
		if err == nil || !isRetryable(err) {
			break
		}

		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(time.Second):
		}
	}

	if err != nil {
		_ = sqlDB.Close()
		return nil, err
	}

	return sqlDB, nil
}

// fileNodeStore is the cluster's members as the local dqlite app keeps them in its
// cluster.yaml (the app's own store is not exported, and a node that does not lead cannot
// answer for the members), read again at each connection; the last list read stands in
// while the file is being rewritten.
type fileNodeStore struct {
	path string
	mu   sync.Mutex
	last []client.NodeInfo
}

func (s *fileNodeStore) Get(ctx context.Context) ([]client.NodeInfo, error) {
	nodes, err := s.read(ctx)
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || len(nodes) == 0 {
		if s.last == nil {
			return nodes, err
		}

		return s.last, nil
	}

	s.last = nodes
	return nodes, nil
}

func (s *fileNodeStore) read(ctx context.Context) ([]client.NodeInfo, error) {
	store, err := client.NewYamlNodeStore(s.path)
	if err != nil {
		return nil, err
	}

	return store.Get(ctx)
}

// Set is not used by the driver (the local node keeps the members).
func (s *fileNodeStore) Set(context.Context, []client.NodeInfo) error {
	return nil
}

// watchedDial wraps dial's connections to other members in watchedConn. The local node's
// abstract unix socket (a single daemon's) cannot be cut off, and a machine slow enough to
// keep it silent for answerWithin is better waited for than retried.
func watchedDial(dial client.DialFunc, within time.Duration) client.DialFunc {
	return func(ctx context.Context, address string) (net.Conn, error) {
		conn, err := dial(ctx, address)
		if err != nil || strings.HasPrefix(address, "@") {
			return conn, err
		}

		return &watchedConn{Conn: conn, within: within}, nil
	}
}

// watchedConn gives every read at most within to get a byte, or the deadline its caller
// set if that is sooner: the dqlite protocol reads only an answer it asked for, so a read
// that waits longer is a leader that is gone.
type watchedConn struct {
	net.Conn
	within time.Duration

	mu  sync.Mutex
	set time.Time // the caller's read deadline (zero: none)
}

func (c *watchedConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	deadline := time.Now().Add(c.within)
	if !c.set.IsZero() && c.set.Before(deadline) {
		deadline = c.set
	}

	_ = c.Conn.SetReadDeadline(deadline)
	c.mu.Unlock()
	return c.Conn.Read(b)
}

func (c *watchedConn) SetDeadline(t time.Time) error {
	c.mu.Lock()
	c.set = t
	c.mu.Unlock()
	return c.Conn.SetDeadline(t)
}

func (c *watchedConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.set = t
	c.mu.Unlock()
	return c.Conn.SetReadDeadline(t)
}
