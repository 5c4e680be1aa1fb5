// Package lease gives a task one owner in a cluster of lxd-deployd members: a named lease
// stored in dqlite, held by one member until it expires, renewed while the holder lives.
//
// Why leases rather than "the dqlite leader does it": a lease is per task, so tasks can
// spread over members, a rollout can be claimed per deployment, and a task's owner changes
// only when that owner stops renewing, not on every raft election. The database is the one
// arbiter; nothing depends on which member the raft leader happens to be.
//
// A lease has a fencing token that grows every time it is acquired and never goes back.
// A holder paused past its expiry (GC, a stalled disk, a partition) may still believe it
// holds the lease; Check, called in the transaction of each write the task makes, refuses
// that write, because the row now names another holder or a larger token.
//
// Typical use is Manager.Run, which runs a job only while the lease is held:
//
//	leases := lease.NewManager(cluster, memberName, lease.DefaultTTL, logger)
//	go leases.Run(ctx, "reconcile", func(ctx context.Context, l lease.Lease) {
//		reconciler.run(ctx) // ctx ends when the lease is lost or Run's ctx ends
//	})
//
// and for one-off claims (a rollout of one deployment):
//
//	l, err := leases.Acquire(ctx, "rollout/default/web") // lease.ErrHeld if taken
//	defer leases.Release(ctx, l)
//	... tx: lease.Check(ctx, tx, l) before each write; leases.Renew(ctx, &l) periodically
//
// Expiry compares wall clocks of different members: their clocks must agree to well under
// the TTL (NTP does). Run stops a job a quarter TTL before the lease expires by its own
// monotonic clock, measured from before the acquiring transaction began.
package lease

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// DefaultTTL is how long a lease lasts without renewal: a dead holder's task is taken over
// within about this long. It is several times the worst write stall of a leader change
// (under a second on loopback, see `make bench`), so that a live holder keeps its lease
// through an election.
const DefaultTTL = 8 * time.Second

// Lease is a held lease: its name, holder, fencing token and expiry (database time).
type Lease = db.Lease

// ErrHeld says another member holds the lease.
var ErrHeld = db.ErrLeaseHeld

// ErrLost says the lease is no longer held by the caller: it expired, was released, or
// another member took it.
var ErrLost = db.ErrLeaseLost

// Store runs database transactions; *db.Cluster is one.
type Store interface {
	Transaction(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error
}

// Manager acquires, renews and releases leases on behalf of one member.
type Manager struct {
	store  Store
	holder string
	ttl    time.Duration
	logger *slog.Logger
}

// NewManager returns a manager taking leases for holder (a member name, unique in the
// cluster) that last ttl without renewal; Run logs to logger when it gains or loses one.
func NewManager(store Store, holder string, ttl time.Duration, logger *slog.Logger) *Manager {
	if logger == nil {
		logger = slog.Default()
	}

	return &Manager{store: store, holder: holder, ttl: ttl, logger: logger}
}

// Acquire takes the lease called name, returning ErrHeld when another member holds it.
// Acquiring a lease this member already holds succeeds with a new token, which fences the
// earlier tenure (its Check and Renew then fail): leases arbitrate between members, so
// two goroutines of one member that must not both work serialise themselves.
func (m *Manager) Acquire(ctx context.Context, name string) (Lease, error) {
	var lease *Lease
	err := m.store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		lease, err = db.AcquireLease(ctx, tx, name, m.holder, time.Now(), m.ttl)
		return err
	})
	if err != nil {
		return Lease{}, err
	}

	return *lease, nil
}

// Held returns who holds the lease called name, and false when nobody does (never taken,
// released or expired).
func (m *Manager) Held(ctx context.Context, name string) (Lease, bool, error) {
	var lease *Lease
	err := m.store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		lease, err = db.GetLease(ctx, tx, name)
		return err
	})
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, false, nil
	}

	if err != nil {
		return Lease{}, false, err
	}

	return *lease, lease.Holder != "" && lease.ExpiresAt.After(time.Now()), nil
}

// Renew extends a held lease by the TTL and updates its expiry, or returns ErrLost.
func (m *Manager) Renew(ctx context.Context, lease *Lease) error {
	return m.store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		expires, err := db.RenewLease(ctx, tx, *lease, time.Now(), m.ttl)
		if err == nil {
			lease.ExpiresAt = expires
		}

		return err
	})
}

// Release frees a held lease so that another member takes it at once (a clean shutdown
// hands its tasks over without waiting for the TTL). Releasing a lost lease does nothing.
func (m *Manager) Release(ctx context.Context, lease Lease) error {
	return m.store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.ReleaseLease(ctx, tx, lease)
	})
}

// Check returns ErrLost unless lease is still held. Call it inside the transaction of a
// write made on the lease's behalf: the write then commits only while the lease is held.
func Check(ctx context.Context, tx *sql.Tx, lease Lease) error {
	return db.CheckLease(ctx, tx, lease, time.Now())
}

// Run runs job while this member holds the lease called name, until ctx ends. It tries to
// acquire every third of the TTL; once it holds the lease it starts job and renews every
// third of the TTL. job's context ends when the lease is lost, when renewals fail for so
// long that the lease is about to expire, or when ctx ends; job must then return promptly.
// If job returns by itself the lease is released and Run tries again later. On ctx's end
// the lease is released, so that another member takes the task over at once.
func (m *Manager) Run(ctx context.Context, name string, job func(ctx context.Context, lease Lease)) {
	retry := m.ttl / 3
	for ctx.Err() == nil {
		err := m.hold(ctx, name, job)
		if err != nil && !errors.Is(err, ErrHeld) && ctx.Err() == nil {
			// Lost, or transient database trouble (no leader during an election): the
			// next attempt decides who holds it.
			m.logger.Warn("lease not held", "lease", name, "err", err)
		}

		select {
		case <-ctx.Done():
		case <-time.After(retry):
		}
	}
}

// hold acquires the lease once and, when that works, runs job until the lease is lost, job
// returns or ctx ends.
func (m *Manager) hold(ctx context.Context, name string, job func(ctx context.Context, lease Lease)) error {
	// The local deadline is measured before the acquiring transaction starts, so it is never
	// later than the expiry other members read from the database.
	start := time.Now()
	lease, err := m.Acquire(ctx, name)
	if err != nil {
		return err
	}

	m.logger.Info("lease acquired", "lease", name, "token", lease.Token)
	margin := m.ttl / 4
	deadline := start.Add(m.ttl - margin)
	jobCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	held := lease // the job's copy: its ExpiresAt goes stale, its token (what Check needs) does not
	go func() {
		defer close(done)
		job(jobCtx, held)
	}()

	defer func() {
		cancel()
		<-done

		// Release with a context of its own: on shutdown ctx has ended already.
		releaseCtx, cancelRelease := context.WithTimeout(context.Background(), m.ttl/2)
		defer cancelRelease()
		_ = m.Release(releaseCtx, lease)
	}()

	renew := time.NewTicker(m.ttl / 3)
	defer renew.Stop()
	expiry := time.NewTimer(time.Until(deadline))
	defer expiry.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done:
			return nil
		case <-expiry.C:
			return fmt.Errorf("lease %q: renewals failed until it was about to expire: %w", name, ErrLost)
		case <-renew.C:
			attempt := time.Now()
			renewCtx, cancelRenew := context.WithDeadline(ctx, deadline)
			err := m.Renew(renewCtx, &lease)
			cancelRenew()
			if errors.Is(err, ErrLost) {
				return err
			}

			if err == nil {
				deadline = attempt.Add(m.ttl - margin)
				expiry.Reset(time.Until(deadline))
			}
		}
	}
}
