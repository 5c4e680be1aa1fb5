package main

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
)

// wire builds the engines once, before any of them runs: one reporter (lifecycle, with the
// wakers every copy shares), one fleet (package fleet: the one way instances of shapes are
// made and removed, with its warm pool, hook keeper, autohealer and reconciler), the
// health checker and the rollout engine. The API handlers
// (apis) and the in-package tests use what it built.
func (d *daemon) wire() {
	d.wake = &wakers{}
	l := d.lifecycle()
	owner := d.db.Address()
	d.life = &instanceCare{stopping: make(chan struct{})}
	d.fleet = fleet.New(fleet.Config{DB: d.db, LXD: d.lxd, Ops: d.ops, Inflight: d.inflight, Sockets: d.governors, Reporter: l, Metrics: l.metrics, Logger: d.logger,
		RequestLogger: requestLoggerIfAny, Stopping: d.life.stopping, Owner: owner, OfflineAfter: offlineAfter})
	d.life.checker = &health.Checker{DB: d.db, LXD: d.lxd, Logger: d.logger, Concurrency: healthConcurrency, OnChange: d.fleet.Healer.HealthChanged}
	d.rollouts = rollout.New(d.db, d.lxd, d.fleet, l, d.logger, owner)
	*d.wake = wakers{rollouts: d.rollouts.Poke, images: d.rollouts.WatchImages, pools: d.fleet.RefillPools}
}
