package main

import (
	"context"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/task"
)

// Instance care is the background care of instances: health checks, and the fleet's
// autohealing, lifecycle hooks, warm pools, locations and in-place resizes. They run on one
// member at a time, the holder of the instances lease (cluster.go), so each instance is
// checked and healed by one member.

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

// instanceCare runs the parts newDaemon built, as one task group, while this member holds
// the instances lease, until ctx ends. When the lease ends the parts get backgroundWait to
// return; any that did not is named and left behind, so the lease is not held up by it.
func (d *daemon) instanceCare(ctx context.Context) {
	d.leases.Run(ctx, leaseInstances, func(ctx context.Context, _ lease.Lease) {
		parts := d.instanceCareParts()
		parts.Start(ctx)
		<-ctx.Done()
		err := parts.Stop(context.Background(), backgroundWait)
		if err != nil {
			d.logger.Warn("instance care did not stop with its lease", "err", err)
		}
	})
}

// instanceCareParts declares the loops of one term of the instances lease.
func (d *daemon) instanceCareParts() *task.Group {
	parts := &task.Group{}
	parts.Add("warm pool", func(ctx context.Context) { d.fleet.Pool.Run(ctx, warmPoolInterval) })
	parts.Add("lifecycle hooks", func(ctx context.Context) { d.fleet.Hooks.Run(ctx, hooksInterval) })
	parts.Add("autohealing", func(ctx context.Context) { d.fleet.Healer.Run(ctx, autohealInterval) })
	parts.Add("health checks", func(ctx context.Context) { d.checker.Run(ctx, healthTick) })
	parts.Add("in-place resizes", func(ctx context.Context) { d.fleet.InPlace.Run(ctx, inPlaceInterval) })
	parts.Add("locations", func(ctx context.Context) { d.fleet.Locations.Run(ctx, locationInterval) })
	return parts
}
