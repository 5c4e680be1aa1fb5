package fleet

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Fleet makes and removes the instances of shapes: the one place where the bound check, the
// instance record and LXD meet. The governor API, rollouts and autohealing all go through
// it, so the bounds hold whoever asks. Each change is two steps: a reservation (one
// transaction: the bound check, the record, the activity entry) and the LXD work.
//
// New builds it with the loops that care for its instances (Pool, Hooks, Healer,
// Reconciler); the daemon runs them on the holder of their lease.
type Fleet struct {
	db       *db.Cluster
	lxd      *backend.LXD
	ops      *operations.Manager
	inflight *Inflight
	sockets  Sockets
	reporter Reporter
	metrics  *metrics.Metrics
	logger   *slog.Logger

	// writes shares transactions between the concurrent launches' reservations and
	// "created" records (db.GroupCommit).
	writes *db.GroupCommit

	// requestLogger returns the logger of the request a context belongs to, nil outside one.
	requestLogger func(ctx context.Context) *slog.Logger

	// stopping closes when the daemon stops: operations that only wait (drains) end then.
	stopping <-chan struct{}

	// owner names this daemon on the instance records it changes.
	owner string

	// Pool hands out warm pool instances to launches and keeps the pools at their size.
	Pool *WarmPool

	// Hooks ends the lifecycle hook waits that are decided or past their deadline.
	Hooks *HookKeeper

	// Healer replaces unhealthy and missing instances of shapes with health.replace.
	Healer *Autohealer

	// Reconciler brings the records and LXD back into agreement.
	Reconciler *Reconciler

	// Locations keeps each record's LXD cluster member as LXD has it (locations.go).
	Locations *LocationKeeper

	// InPlace brings instances whose revision differs from the latest only in live keys up
	// to date in place, round after round (resize_pass.go).
	InPlace *InPlaceKeeper

	// draining counts the drains running here per LXD member: closed to new instances
	// (drain.go).
	drainingMu sync.Mutex
	draining   map[string]int
}

// Config is what the fleet is built from. Everything but DB may be nil in tests that do
// not reach it.
type Config struct {
	DB       *db.Cluster
	LXD      *backend.LXD
	Ops      *operations.Manager
	Inflight *Inflight
	Sockets  Sockets
	Reporter Reporter
	Metrics  *metrics.Metrics
	Logger   *slog.Logger

	// RequestLogger returns the logger of the request a context belongs to (nil outside
	// one), for the operations the fleet starts.
	RequestLogger func(ctx context.Context) *slog.Logger

	// Stopping closes when the daemon begins to stop.
	Stopping <-chan struct{}

	// Owner names this daemon on the records it changes (its database address).
	Owner string

	// OfflineAfter is how long without a heartbeat before a member counts as offline.
	OfflineAfter time.Duration

	// PoolWake wakes the warm pool at once (RefillPools). The daemon makes it before the
	// reporter that pokes it and hands the same one here, as the fleet reports through
	// that reporter; a zero one is made here.
	PoolWake loop.Loop
}

// New builds the one fleet of a daemon, with its warm pool, hook keeper, autohealer and
// reconciler.
func New(c Config) *Fleet {
	if c.Inflight == nil {
		c.Inflight = NewInflight()
	}

	if c.Reporter == nil {
		c.Reporter = silent{}
	}

	if c.Logger == nil {
		c.Logger = slog.Default()
	}

	if c.PoolWake == (loop.Loop{}) {
		c.PoolWake = loop.New()
	}

	if c.RequestLogger == nil {
		c.RequestLogger = func(context.Context) *slog.Logger { return nil }
	}

	f := &Fleet{db: c.DB, lxd: c.LXD, ops: c.Ops, inflight: c.Inflight, sockets: c.Sockets, reporter: c.Reporter, metrics: c.Metrics, logger: c.Logger,
		requestLogger: c.RequestLogger, stopping: c.Stopping, owner: c.Owner, writes: c.DB.Writes()}
	f.Pool = newWarmPool(f, c.PoolWake)
	f.Hooks = newHookKeeper(f)
	f.Healer = newAutohealer(f)
	f.Reconciler = newReconciler(f, c.OfflineAfter)
	f.Locations = &LocationKeeper{db: f.db, lxd: f.lxd, reporter: f.reporter, logger: f.logger, reported: map[int64]bool{}}
	f.InPlace = newInPlaceKeeper(f)
	f.draining = map[string]int{}
	return f
}

// Sockets is what the fleet needs of the governor sockets: a launch of a shape with
// governor.socket gets one, an instance it deletes loses its own.
type Sockets interface {
	AddInstance(project string, instance string) (string, error)
	RemoveInstance(project string, instance string)
}

// Reporter is how the fleet tells what it did: lifecycle events (on /1.0/events and the
// log) and webhook events for a deployment's governor. Package main's reporter implements
// it; it holds no pointer to any engine.
type Reporter interface {
	// Send sends a lifecycle event, naming who asked for the change.
	Send(by api.DeploymentRequestor, deploymentID int64, event reporter.Event)

	// Notify queues a webhook event for the deployment's governor.
	Notify(ctx context.Context, deploymentID int64, eventType string, metadata any)
}

// silent reports nothing (a fleet built without a reporter, in tests).
type silent struct{}

func (silent) Send(api.DeploymentRequestor, int64, reporter.Event) {}
func (silent) Notify(context.Context, int64, string, any)          {}

// instanceChanged tells the governor what happened to one of its instances.
func instanceChanged(ctx context.Context, r Reporter, deploymentID int64, action reporter.InstanceAction, shape string, instance string) {
	r.Notify(ctx, deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(action), Shape: shape, Instance: instance})
}

// Change says who asks for an instance change and why, for the activity log and events.
type Change struct {
	By  api.DeploymentRequestor
	Why string

	// InTx, when set, runs inside the reservation's transaction after the bound check:
	// rollouts record their progress there, so a crash cannot count a step twice.
	InTx func(ctx context.Context, tx *sql.Tx, shape *db.Shape, row int64) error

	// FromRollout marks a rollout's own launches: any other launch or delete moves the size
	// a running rollout keeps (ScaleActivity).
	FromRollout bool

	// before, when set, runs inside a launch's reservation before the bound check: a
	// replacement takes the instance it replaces out of the count there (autoheal.go).
	before func(ctx context.Context, tx *sql.Tx, shape *db.Shape) error

	// drained says a delete ends an instance's terminating:wait (hooks.go): its bound
	// check was made when the wait began.
	drained bool

	// replaces names the instance a launch replaces (autohealing): not a scale change, so
	// the activity log says "replace" and a running rollout's size stays.
	replaces string
}
