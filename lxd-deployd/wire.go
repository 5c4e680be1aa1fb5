package main

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/doorkeeper"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor/waker"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/scheduler"
)

// wire builds the engines once, before any of them runs: one reporter (package reporter;
// the loops it wakes are set on it last), one fleet (package fleet: the one way instances
// of shapes are made and removed, with its warm pool, hook keeper, autohealer and
// reconciler), the health checker and the rollout engine (package rollout, which sees the
// fleet and the reporter through its own interfaces). The API handlers (apis) and the
// in-package tests use what it built.
func (d *daemon) wire() {
	d.reporter = reporter.New(reporter.Config{Events: d.events, Webhooks: d.webhooks, Metrics: d.metrics, Logger: d.logger})
	l := d.reporter
	owner := d.db.Address()
	d.life = &instanceCare{stopping: make(chan struct{})}
	// Holds (scale to zero) sit behind a private door only: an operator's HAProxy may not
	// reach this daemon's loopback (doc/traffic.md).
	if d.config.frontDoor == frontDoorPrivate {
		d.holds = waker.NewSet(waker.SetConfig{Logger: d.logger})
	}

	d.doors = doorkeeper.New(doorkeeper.Config{Observer: doorkeeper.NewObserver(d.db, d.lxd), Door: d.door, Notify: d.endpointsChanged, Logger: d.logger, Holds: d.holds, Wake: d.wakeShape})
	d.fleet = fleet.New(fleet.Config{DB: d.db, LXD: d.lxd, Ops: d.ops, Inflight: d.inflight, Sockets: d.governors, Reporter: l, Metrics: d.metrics, Logger: d.logger,
		RequestLogger: requestLoggerIfAny, Stopping: d.life.stopping, Owner: owner, OfflineAfter: offlineAfter, Drains: d.doors})
	d.life.checker = &health.Checker{DB: d.db, LXD: d.lxd, Logger: d.logger, Concurrency: healthConcurrency, Metrics: d.metrics, OnChange: d.fleet.Healer.HealthChanged}
	d.rollouts = rollout.New(d.db, d.lxd, d.fleet, l, d.logger, owner, d.governors)
	d.scheduler = scheduler.New(d.db, l, d.scheduleClock, d.logger)
	l.SetWaker(engines{rollouts: d.rollouts, fleet: d.fleet})
}

// engines are the loops a change wakes (reporter.Waker), set once on the one reporter.
type engines struct {
	rollouts *rollout.Engine
	fleet    *fleet.Fleet
}

func (e engines) WakeRollouts() { e.rollouts.Poke() }
func (e engines) WatchImages()  { e.rollouts.WatchImages() }
func (e engines) RefillPools()  { e.fleet.RefillPools() }
