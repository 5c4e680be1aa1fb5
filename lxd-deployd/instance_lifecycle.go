package main

import (
	"context"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
)

// instanceLifecycle is the background work of issue 10: health checks, autohealing,
// lifecycle hooks and warm pools. Each part runs on the dqlite leader.
type instanceLifecycle struct {
	pool    *warmPool
	hooks   *hookKeeper
	healer  *autohealer
	checker *health.Checker

	// stopping closes when the daemon begins to stop.
	stopping chan struct{}
}

// How often each part looks for work (they are also poked when something happens).
const (
	healthTick       = time.Second
	autohealInterval = 2 * time.Second
	hooksInterval    = time.Second
	warmPoolInterval = 5 * time.Second

	// healthConcurrency bounds the checks running at once across all shapes.
	healthConcurrency = 8
)

// startInstanceLifecycle builds the parts and runs them until ctx ends. It must run before
// the API is built, since launches take from the warm pool.
func (d *daemon) startInstanceLifecycle(ctx context.Context) {
	l := lifecycle{events: d.events, webhooks: d.webhooks}
	d.life = &instanceLifecycle{pool: newWarmPool(d.db, d.lxd, d.inflight, d.logger, d.db.Address()), stopping: make(chan struct{})}
	f := d.fleet()
	d.life.hooks = newHookKeeper(d.db, f, l, d.logger)
	d.life.healer = newAutohealer(d.db, f, l, d.logger, d.db.Address())
	d.life.checker = &health.Checker{DB: d.db, LXD: d.lxd, Logger: d.logger, Concurrency: healthConcurrency, OnChange: d.life.healer.healthChanged}
	d.reconciler.healer = d.life.healer

	d.goBackground(func() { d.life.pool.run(ctx, warmPoolInterval) })
	d.goBackground(func() { d.life.hooks.run(ctx, hooksInterval) })
	d.goBackground(func() { d.life.healer.run(ctx, autohealInterval) })
	d.goBackground(func() { d.life.checker.Run(ctx, healthTick) })
}
