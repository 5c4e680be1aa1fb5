package main

import (
	"context"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
)

// instanceCare is the background care of instances: health checks, autohealing,
// lifecycle hooks and warm pools. They run on one member at a time, the holder of the
// instances lease (cluster.go), so each instance is checked and healed by one member.
type instanceCare struct {
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

// startInstanceCare builds the parts and runs them until ctx ends. It must run before
// the API is built, since launches take from the warm pool.
func (d *daemon) startInstanceCare(ctx context.Context) {
	l := d.lifecycle()
	d.life = &instanceCare{pool: newWarmPool(d.db, d.lxd, d.inflight, d.logger, d.db.Address()), stopping: make(chan struct{})}
	f := d.fleet()
	d.life.hooks = newHookKeeper(d.db, f, l, d.logger)
	d.life.healer = newAutohealer(d.db, f, l, d.logger, d.db.Address())
	d.life.checker = &health.Checker{DB: d.db, LXD: d.lxd, Logger: d.logger, Concurrency: healthConcurrency, OnChange: d.life.healer.healthChanged}
	d.reconciler.healer = d.life.healer

	d.goBackground(func() {
		d.leases.Run(ctx, leaseInstances, func(ctx context.Context, _ lease.Lease) {
			var parts sync.WaitGroup
			parts.Add(4)
			go func() { defer parts.Done(); d.life.pool.run(ctx, warmPoolInterval) }()
			go func() { defer parts.Done(); d.life.hooks.run(ctx, hooksInterval) }()
			go func() { defer parts.Done(); d.life.healer.run(ctx, autohealInterval) }()
			go func() { defer parts.Done(); d.life.checker.Run(ctx, healthTick) }()
			parts.Wait()
		})
	})
}
