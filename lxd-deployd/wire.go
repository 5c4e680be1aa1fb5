package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/cluster"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/doorkeeper"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor/waker"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics/scrape"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/observed"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/scheduler"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// newDaemon builds the daemon on what was opened, every part once and in an order where
// each gets what it uses when it is made: nothing is set on a part afterwards. The
// reporter and the engines it wakes need each other, so the wake-ups (package loop) are
// made first and handed to both; the LXD probe loop is told of the metrics that read its
// status when it runs. The background loops are declared here (tasks) and run by start.
// The API handlers (apis) and the in-package tests use what it built. quit, when set,
// stops the daemon as SIGTERM would.
func newDaemon(o *opened, logger *slog.Logger, quit context.CancelFunc) (*daemon, error) {
	allowed, err := webhooks.ParseNetworks(o.config.webhookAllowedNetworks)
	if err != nil {
		return nil, fmt.Errorf("--webhook-allowed-networks: %w", err)
	}

	clock, err := scheduler.FileClock(o.config.testClockFile, logger)
	if err != nil {
		return nil, err
	}

	// The event server logs through the plain logger: a dropped-event warning must not
	// loop back into the events (logging.go). Everything else logs through both.
	eventServer := events.NewServer(logger, o.member)
	logger = rest.WithLoggingEvents(logger, eventServer)
	lxd := backend.NewLXD(o.config.lxdSocket, logger)
	ops := operations.NewManager(logger, eventServer, o.member, cluster.NewOperationRecorder(o.db.Writes(), o.member))
	// A private front door is its member's own; an operator's HAProxy is driven by the
	// holder of its lease, the other members follow it (doc/traffic.md, "In a cluster of
	// daemons"). Endpoint changes go out as events of this member.
	// Holds (scale to zero) sit behind a private door only: an operator's HAProxy may not
	// reach this daemon's loopback (doc/traffic.md). A wake asks the governor through the
	// reporter, which is made after the metrics that read the doorkeeper: the wake calls
	// the daemon built below, and runs only once it has started.
	var d *daemon
	var holds *waker.SetConfig
	if o.config.frontDoor == doorkeeper.DoorPrivate {
		holds = &waker.SetConfig{Logger: logger}
	}

	leases := lease.NewManager(o.db, o.member, lease.DefaultTTL, logger)
	var shared *doorkeeper.Shared
	if o.config.frontDoor == doorkeeper.DoorHAProxy {
		shared = &doorkeeper.Shared{Leases: leases, Lease: doorkeeper.SharedLease(o.config.haproxySocket)}
	}

	doors := doorkeeper.New(doorkeeper.Config{Observer: doorkeeper.NewObserver(o.db, lxd), Door: o.door, Logger: logger, Holds: holds, Shared: shared,
		Wake: func(s doorkeeper.ObservedShape, waiting func() int) { d.wakeShape(s, waiting) },
		Notify: func(project string, deploymentID int64, event api.DeploymentShapeEndpointsEvent) {
			eventServer.Send(api.EventTypeEndpoints, project, deploymentID, event)
		}})
	m := scrape.New(o.db, lxd, ops, doors)
	snapshot := observed.New(lxd, func() bool { return lxd.Status().Online }, scrape.LXDMetricsFetched(m))
	dispatcher := webhooks.NewDispatcher(webhooks.DispatcherConfig{DB: o.db, Owner: o.db.Address(), Logger: logger, Policy: webhooks.DestinationPolicy{Allowed: allowed}, Attempts: m})
	wake := wakeups{rollouts: loop.New(), images: loop.New(), pools: loop.New()}
	l := reporter.New(reporter.Config{Events: eventServer, Webhooks: dispatcher, Metrics: m, Logger: logger, Waker: wake})
	owner := o.db.Address()
	stopping := make(chan struct{})
	inflight := fleet.NewInflight()
	f := fleet.New(fleet.Config{DB: o.db, LXD: lxd, Ops: ops, Inflight: inflight, Sockets: o.governors, Reporter: l, Metrics: m, Logger: logger,
		RequestLogger: rest.RequestLoggerIfAny, Stopping: stopping, Owner: owner, OfflineAfter: cluster.OfflineAfter, PoolWake: wake.pools, Drains: doors})

	d = &daemon{
		opened:    o,
		logger:    logger,
		lxd:       lxd,
		events:    eventServer,
		ops:       ops,
		inflight:  inflight,
		fleet:     f,
		checker:   &health.Checker{DB: o.db, LXD: lxd, Listings: snapshot, Logger: logger, Concurrency: healthConcurrency, Metrics: m, OnChange: f.Healer.HealthChanged},
		rollouts:  rollout.New(o.db, lxd, f, l, logger, owner, o.governors, rollout.Wakes{Rollouts: wake.rollouts, Images: wake.images}),
		reporter:  l,
		tokens:    auth.NewSharedTokenVerifier(db.TokenIDs{DB: o.db}),
		webhooks:  dispatcher,
		metrics:   m,
		leases:    leases,
		scheduler: scheduler.New(o.db, l, clock, logger),
		conns:     rest.NewConnLimits(rest.DefaultConnBudgets, logger),
		doors:     doors,
		snapshot:  snapshot,
		stopping:  stopping,
		quit:      quit,
	}

	d.addTasks()
	return d, nil
}

// addTasks declares the daemon's background loops: the LXD connection and the rollout
// engine on every member (each rollout is claimed by one member at a time), the heartbeat,
// and the cluster-wide work each under its lease (cluster.go, instance_care.go,
// schedule.go).
func (d *daemon) addTasks() {
	d.tasks.Add("lxd connection", func(ctx context.Context) { d.lxd.Run(ctx, d.config.lxdPollInterval, d.metrics) })
	d.tasks.Add("front door", func(ctx context.Context) { d.doors.Run(ctx, doorkeeper.Interval) })
	d.tasks.Add("rollouts", func(ctx context.Context) { d.rollouts.Run(ctx, time.Second) })
	d.tasks.Add("image trigger", d.rollouts.RunImageTrigger)
	member := d.clusterMember()
	d.tasks.Add("heartbeat", func(ctx context.Context) { member.Heartbeat(ctx, d.quit) })
	if d.identity != nil {
		d.tasks.Add("member events", func(ctx context.Context) { member.RelayEvents(ctx, d.events) })
	}

	d.addLeasedWork(webhooks.NewCollector(d.db, d.snapshot, d.webhooks, d.logger).WithTraffic(d.doors.FrontendStats))
	d.tasks.Add("instance care", d.instanceCare)
	d.tasks.Add("schedule", d.runSchedule)
	d.tasks.Add("instance usage", func(ctx context.Context) { d.snapshot.Run(ctx, observed.RefreshEvery) })
}

// wakeups are the loops a change wakes (reporter.Waker): the rollout engine's, the
// image-change trigger's and the warm pools'. Made before the reporter and the engines,
// and handed to both, so that neither needs the other.
type wakeups struct {
	rollouts loop.Loop
	images   loop.Loop
	pools    loop.Loop
}

func (w wakeups) WakeRollouts() { w.rollouts.Poke() }
func (w wakeups) WatchImages()  { w.images.Poke() }
func (w wakeups) RefillPools()  { w.pools.Poke() }
