package main

import (
	"context"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
)

// instanceCare is the background care of instances: health checks here, and the fleet's
// autohealing, lifecycle hooks and warm pools. They run on one member at a time, the holder
// of the instances lease (cluster.go), so each instance is checked and healed by one member.
type instanceCare struct {
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
	locationInterval = 2 * time.Second  // LXD cluster members of the records (fleet/locations.go)
	inPlaceInterval  = 30 * time.Second // resizes left undone (fleet/resize_pass.go)

	// healthConcurrency bounds the checks running at once across all shapes. LXD's exec
	// rate is flat from 2 to 16 at once and falls past that (doc/health.md); 16 leaves room
	// for check commands that sleep.
	healthConcurrency = 16
)

// startInstanceCare runs the parts wire built until ctx ends, on the holder of the
// instances lease.
func (d *daemon) startInstanceCare(ctx context.Context) {

	d.goBackground(func() {
		d.leases.Run(ctx, leaseInstances, func(ctx context.Context, _ lease.Lease) {
			var parts sync.WaitGroup
			parts.Add(6)
			go func() { defer parts.Done(); d.fleet.Pool.Run(ctx, warmPoolInterval) }()
			go func() { defer parts.Done(); d.fleet.Hooks.Run(ctx, hooksInterval) }()
			go func() { defer parts.Done(); d.fleet.Healer.Run(ctx, autohealInterval) }()
			go func() { defer parts.Done(); d.life.checker.Run(ctx, healthTick) }()
			go func() { defer parts.Done(); d.fleet.InPlace.Run(ctx, inPlaceInterval) }()
			go func() {
				defer parts.Done()
				d.fleet.Locations.Run(ctx, locationInterval)
			}()
			parts.Wait()
		})
	})
}
