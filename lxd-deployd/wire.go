package main

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
)

// wire builds the engines once, before any of them runs: one reporter (lifecycle, with the
// wakers every copy shares), one fleet (the one way instances of shapes are made and
// removed), the instance care loops, reconcile and the rollout engine. The API handlers
// (apis) and the in-package tests use what it built.
func (d *daemon) wire() {
	d.wake = &wakers{}
	l := d.lifecycle()
	owner := d.db.Address()
	d.life = &instanceCare{pool: newWarmPool(d.db, d.lxd, d.inflight, d.logger, owner), stopping: make(chan struct{})}
	d.fleet = &instanceFleet{db: d.db, lxd: d.lxd, ops: d.ops, inflight: d.inflight, sockets: d.governors, lifecycle: l, pool: d.life.pool, stopping: d.life.stopping, owner: owner}
	d.life.hooks = newHookKeeper(d.db, d.fleet, l, d.logger)
	d.life.healer = newAutohealer(d.db, d.fleet, l, d.logger, owner)
	d.life.checker = &health.Checker{DB: d.db, LXD: d.lxd, Logger: d.logger, Concurrency: healthConcurrency, OnChange: d.life.healer.healthChanged}
	d.reconciler = newReconciler(d.db, d.lxd, d.inflight, d.governors, l, d.logger, owner)
	d.reconciler.healer = d.life.healer
	d.rollouts = newRolloutEngine(d.db, d.lxd, d.fleet, l, d.logger, owner)
	*d.wake = wakers{rollouts: d.rollouts.poke, images: d.rollouts.images.poke, pools: d.fleet.refillPools}
}
