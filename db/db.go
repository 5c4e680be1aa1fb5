// Package db is the only place lxd-deployd talks SQL. State lives in dqlite through
// go-dqlite's app package: one embedded node by default, a raft cluster when several daemons
// are given each other's addresses.
package db

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/canonical/go-dqlite"
	"github.com/canonical/go-dqlite/app"
	"github.com/canonical/go-dqlite/client"
	"github.com/canonical/go-dqlite/driver"
	lxdapi "github.com/canonical/lxd/shared/api"
)

// databaseName is the name of the dqlite database holding all state.
const databaseName = "lxd-deployd"

// Options says how this node takes part in the dqlite cluster.
type Options struct {
	// Address this node's dqlite listens on. Empty means a private abstract unix socket,
	// which is all a single node needs; set host:port to let other daemons join.
	Address string

	// Cluster holds addresses of existing members to join on first start.
	Cluster []string

	// Logger receives dqlite's own log lines.
	Logger *slog.Logger

	// TLS, when set, encrypts and authenticates traffic between members: every member holds
	// the same cluster key pair, as LXD's cluster.crt.
	TLS *tls.Certificate

	// Credentials, when set, replace TLS with certificates read at each handshake, so
	// that the cluster certificate can be rotated while the cluster runs.
	Credentials ClusterCredentials
}

// Cluster is the handle to the database shared by every daemon of a cluster.
type Cluster struct {
	app *app.App
	db  *sql.DB

	// retries counts transactions retried after a transient error, for metrics.
	retries atomic.Uint64

	// markCommits is set once the schema has the commit_markers table (retry.go).
	markCommits bool

	// handedOver is set once Handover ran, so that Close does not try again.
	handedOver atomic.Bool

	// busyTurn is held by the one transaction of this daemon that retries after finding
	// the database busy (busyRetries).
	busyTurn chan struct{}

	// writes is the daemon's one group commit (Writes).
	writesOnce sync.Once
	writes     *GroupCommit
}

// Writes is the group commit the daemon's small writes share: the fleet's launch records
// (reservations and created marks) and the operations' records. One group rather than one each, so that a
// launch's reservation, its operation's record and the other launches' writes that arrive
// together share a commit instead of taking turns at dqlite's one writer (100 concurrent
// launches write each of these). A write of the group must never wait on the group
// (start an operation, say): it would wait for the batch it runs in.
func (c *Cluster) Writes() *GroupCommit {
	c.writesOnce.Do(func() { c.writes = NewGroupCommit(c) })
	return c.writes
}

// Retries returns how many transactions were retried since the database was opened.
func (c *Cluster) Retries() uint64 {
	return c.retries.Load()
}

// Open starts (or joins) the dqlite node whose data lives in dir, waits for it to be ready
// and applies pending schema updates.
func Open(ctx context.Context, dir string, opts Options) (*Cluster, error) {
	c, err := openNode(ctx, dir, opts)
	if err != nil {
		return nil, err
	}

	err = c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return applyUpdates(ctx, tx, updates)
	})
	if err != nil {
		_ = c.Close(ctx)
		return nil, fmt.Errorf("update database schema: %w", err)
	}

	c.markCommits = true
	return c, nil
}

// A raft snapshot every snapshotParams.Threshold log entries, keeping Trailing entries
// after it for members that lag behind (one further behind gets the snapshot, a copy of a
// database of a few MiB). What the log holds in memory is bounded by their sum: at 1,000
// instances an entry (a second's health results) is about 32 KiB, and 64/128 held 3 MiB
// more of C memory than 32/64 for the same CPU (BenchmarkMemory); 16/32 saved 2 MiB more
// but took a third more CPU for the launches' transactions, a snapshot every 16.
var snapshotParams = dqlite.SnapshotParams{Threshold: 32, Trailing: 64}

// openNode starts the dqlite node and opens the database, without touching the schema.
func openNode(ctx context.Context, dir string, opts Options) (*Cluster, error) {
	err := os.MkdirAll(dir, 0o700)
	if err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}

	// The address is fixed at first start (dqlite keeps it in info.yaml); later starts use
	// the stored one unless told otherwise.
	address := opts.Address
	_, statErr := os.Stat(filepath.Join(dir, "info.yaml"))
	if address == "" && statErr != nil {
		address = defaultAddress(dir)
	}

	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}

	logFunc := func(level client.LogLevel, format string, a ...any) {
		if level >= client.LogWarn {
			logger.Warn(fmt.Sprintf(format, a...), "component", "dqlite")
		}
	}

	options := []app.Option{
		app.WithAddress(address),
		app.WithCluster(opts.Cluster),
		app.WithNetworkLatency(networkLatency),
		app.WithRolesAdjustmentFrequency(rolesAdjustment),
		// raft keeps its log entries in memory (each one the WAL pages a commit wrote): with
		// dqlite's defaults (a snapshot every 1,024 entries, 8,192 kept after it) that was
		// most of the daemon's RSS, growing with every write (issue 20's heap profile).
		app.WithSnapshotParams(snapshotParams),
		app.WithLogFunc(logFunc),
	}

	var dialTLS *tls.Config // the members' client side, for our driver's connections
	if opts.Credentials != nil {
		var listenTLS *tls.Config
		listenTLS, dialTLS = rotatingTLS(opts.Credentials)
		options = append(options, app.WithTLS(listenTLS, dialTLS))
	} else if opts.TLS != nil {
		leaf, err := x509.ParseCertificate(opts.TLS.Certificate[0])
		if err != nil {
			return nil, fmt.Errorf("parse cluster certificate: %w", err)
		}

		// The members trust exactly the shared cluster certificate.
		pool := x509.NewCertPool()
		pool.AddCert(leaf)
		var listenTLS *tls.Config
		listenTLS, dialTLS = app.SimpleTLSConfig(*opts.TLS, pool)
		options = append(options, app.WithTLS(listenTLS, dialTLS))
	}

	dqliteApp, err := newApp(dir, opts.TLS != nil || opts.Credentials != nil, options)
	if err != nil {
		return nil, fmt.Errorf("start dqlite node in %q: %w", dir, err)
	}

	readyCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()

	err = dqliteApp.Ready(readyCtx)
	if err != nil {
		_ = dqliteApp.Close()
		return nil, fmt.Errorf("wait for dqlite to be ready: %w", err)
	}

	sqlDB, err := openSQL(ctx, dir, dialTLS, logFunc)
	if err != nil {
		_ = dqliteApp.Close()
		return nil, fmt.Errorf("open database: %w", err)
	}

	return &Cluster{app: dqliteApp, db: sqlDB, busyTurn: make(chan struct{}, 1)}, nil
}

// snapInstanceName is the snap instance name the daemon was started with, if any.
var snapInstanceName = os.Getenv("SNAP_INSTANCE_NAME")

// appMu serialises newApp's environment change with the app.New that reads it.
var appMu sync.Mutex

// newApp starts the dqlite app. go-dqlite (v1.11) binds a TLS member's local node to the
// abstract socket @dqlite-<node id>, and every cluster's first member has the same id
// (dqlite.BootstrapID): two first members on one host (two clusters, or test daemons of
// parallel runs) then collide, and the later one fails with "failed to set bind
// address". The only part of that name go-dqlite lets us choose is the snap instance name
// it puts in it (@snap.<name>.dqlite-<id>); outside a snap we name it after the data
// directory, which no two running daemons share.
func newApp(dir string, withTLS bool, options []app.Option) (*app.App, error) {
	if !withTLS || snapInstanceName != "" {
		return app.New(dir, options...)
	}

	appMu.Lock()
	defer appMu.Unlock()
	_ = os.Setenv("SNAP_INSTANCE_NAME", strings.TrimPrefix(defaultAddress(dir), "@"))
	defer func() { _ = os.Unsetenv("SNAP_INSTANCE_NAME") }()
	return app.New(dir, options...)
}

// defaultAddress derives a per-data-directory abstract socket name, so that several
// single-node daemons (tests, for one) never collide on a port.
func defaultAddress(dir string) string {
	abs, err := filepath.Abs(dir)
	if err != nil {
		abs = dir
	}

	sum := sha256.Sum256([]byte(abs))
	return "@lxd-deployd-" + hex.EncodeToString(sum[:8])
}

// Address returns the dqlite address of this node.
func (c *Cluster) Address() string {
	return c.app.Address()
}

// Members returns how many nodes the dqlite cluster has.
func (c *Cluster) Members(ctx context.Context) (int, error) {
	cli, err := c.app.Client(ctx)
	if err != nil {
		return 0, err
	}

	defer func() { _ = cli.Close() }()
	nodes, err := cli.Cluster(ctx)
	return len(nodes), err
}

// IsLeader reports whether this node is the dqlite leader (the leader gauge in metrics;
// work one member should do runs under a lease instead, lxd-deployd/lease).
func (c *Cluster) IsLeader(ctx context.Context) (bool, error) {
	cli, err := c.app.Client(ctx)
	if err != nil {
		return false, err
	}

	defer func() { _ = cli.Close() }()
	leader, err := cli.Leader(ctx)
	if err != nil || leader == nil {
		return false, err
	}

	return leader.Address == c.app.Address(), nil
}

// transactionAttempts bounds the retries of one transaction: with retryDelay, a writer
// keeps trying for about three seconds, long enough for ten concurrent launches on a loaded
// two-core machine and for a leader election.
const transactionAttempts = 20

// busyRetryFor is how long a transaction that finds the database busy keeps trying, past
// transactionAttempts: a busy database is another writer's commit in progress, which ends,
// unlike a lost leader. 100 concurrent launches beside the health checks of 1,000
// instances waited longer than three seconds, and half of them failed with "database is
// locked" (BenchmarkScale).
const busyRetryFor = 30 * time.Second

// retryDelay grows with the attempt up to 250 ms, with jitter, so that writers that
// collided once do not collide again in lockstep.
func retryDelay(attempt int) time.Duration {
	delay := min(time.Duration(attempt+1)*25*time.Millisecond, 250*time.Millisecond)
	return delay/2 + rand.N(delay/2+1)
}

// Transaction runs f in a database transaction, committing when it returns nil. Busy and
// leadership errors, which a retry can fix, are retried with a short, jittered backoff.
func (c *Cluster) Transaction(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error {
	return c.retried(ctx, func(ctx context.Context) error { return c.transaction(ctx, f) })
}

// Read runs f in a transaction that is rolled back, never committed: for reads, such as
// the trust store and key checks of every request. It skips what a write needs (the
// commit marker's two probes of total_changes(), and the commit), two of the five round
// trips to dqlite of a one-query read, and a write f makes by mistake is undone rather
// than committed without its marker.
func (c *Cluster) Read(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error {
	return c.retried(ctx, func(ctx context.Context) error {
		tx, err := c.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("begin transaction: %w", err)
		}

		defer func() { _ = tx.Rollback() }()
		return f(ctx, tx)
	})
}

// retried runs one attempt of a transaction until it succeeds, fails for good, or the
// retries of busy and leadership errors run out.
func (c *Cluster) retried(ctx context.Context, run func(ctx context.Context) error) error {
	var err error
	var turn busyTurn
	defer turn.release(c.busyTurn)
	start := time.Now()
	for attempt := 0; ; attempt++ {
		err = run(ctx)
		if err != nil && isLostCommit(err) {
			// The leader went away during COMMIT: read back whether it applied.
			err = c.resolveLostCommit(ctx, err)
		}

		if err == nil || !(isRetryable(err) || isLostBeforeCommit(err)) {
			break
		}

		if attempt+1 >= transactionAttempts && !(isBusy(err) && time.Since(start) < busyRetryFor) {
			break
		}

		c.retries.Add(1)
		delay := retryDelay(attempt)
		if isBusy(err) {
			if !turn.held {
				err = turn.take(ctx, c.busyTurn)
				if err != nil {
					return err
				}

				continue
			}

			delay = busyPause(attempt)
		}

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(delay):
		}
	}

	return mapConstraintError(mapLostCommit(err))
}

func (c *Cluster) transaction(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error {
	tx, err := c.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}

	before := int64(-1)
	if c.markCommits {
		err = tx.QueryRowContext(ctx, "SELECT total_changes()").Scan(&before)
		if err != nil {
			_ = tx.Rollback()
			return fmt.Errorf("begin transaction: %w", err)
		}
	}

	err = f(ctx, tx)
	if err != nil {
		_ = tx.Rollback()
		return err
	}

	marker, err := markCommit(ctx, tx, before)
	if err != nil {
		_ = tx.Rollback()
		return err
	}

	err = tx.Commit()
	if err != nil {
		return fmt.Errorf("commit transaction: %w", commitError{err: err, marker: marker})
	}

	return nil
}

// isRetryable reports whether err is a transient dqlite condition.
func isRetryable(err error) bool {
	return isBusy(err) || errors.Is(err, driver.ErrNoAvailableLeader)
}

// isBusy reports whether err is SQLite's busy: another transaction holds the write lock.
func isBusy(err error) bool {
	var dqliteErr driver.Error
	if errors.As(err, &dqliteErr) {
		switch dqliteErr.Code {
		case driver.ErrBusy, driver.ErrBusyRecovery, driver.ErrBusySnapshot:
			return true
		}
	}

	return false
}

// sqliteConstraint is SQLite's primary result code for constraint violations.
const sqliteConstraint = 19

// mapConstraintError turns a constraint violation that slipped past the explicit checks
// (two writers racing on a unique name) into a 409 instead of a 500.
func mapConstraintError(err error) error {
	var dqliteErr driver.Error
	if errors.As(err, &dqliteErr) && dqliteErr.Code&0xff == sqliteConstraint {
		return lxdapi.StatusErrorf(http.StatusConflict, "conflicting change: %s", dqliteErr.Message)
	}

	return err
}
