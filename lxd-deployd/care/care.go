// Package care runs the background care of instances: health checks, and the fleet's
// autohealing, lifecycle hooks, warm pools, locations and in-place resizes. They run on
// one member at a time, the holder of the instances lease, so each instance is checked and
// healed by one member.
package care

import (
	"context"
	"log/slog"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/task"
)

// How often each part looks for work (they are also poked when something happens).
const (
	healthTick       = time.Second
	autohealInterval = 2 * time.Second
	hooksInterval    = time.Second
	warmPoolInterval = 5 * time.Second
	locationInterval = 2 * time.Second  // LXD cluster members of the records (fleet/locations.go)
	inPlaceInterval  = 30 * time.Second // resizes left undone (fleet/resize_pass.go)
)

// Config is what instance care runs: the fleet's keepers and the health checker, under
// the lease named Lease of Leases.
type Config struct {
	Leases  *lease.Manager
	Lease   string
	Fleet   *fleet.Fleet
	Checker *health.Checker
	Logger  *slog.Logger

	// Wait is how long the parts get to return when a term of the lease ends.
	Wait time.Duration
}

// Run runs the parts, as one task group, while this member holds the lease, until ctx
// ends. When the lease ends the parts get Wait to return; any that did not is named and
// left behind, so the lease is not held up by it.
func Run(ctx context.Context, c Config) {
	c.Leases.Run(ctx, c.Lease, func(ctx context.Context, _ lease.Lease) {
		parts := parts(c)
		parts.Start(ctx)
		<-ctx.Done()
		err := parts.Stop(context.Background(), c.Wait)
		if err != nil {
			c.Logger.Warn("instance care did not stop with its lease", "err", err)
		}
	})
}

// parts declares the loops of one term of the lease.
func parts(c Config) *task.Group {
	f := c.Fleet
	parts := &task.Group{}
	parts.Add("warm pool", func(ctx context.Context) { f.Pool.Run(ctx, warmPoolInterval) })
	parts.Add("lifecycle hooks", func(ctx context.Context) { f.Hooks.Run(ctx, hooksInterval) })
	parts.Add("autohealing", func(ctx context.Context) { f.Healer.Run(ctx, autohealInterval) })
	parts.Add("health checks", func(ctx context.Context) { c.Checker.Run(ctx, healthTick) })
	parts.Add("in-place resizes", func(ctx context.Context) { f.InPlace.Run(ctx, inPlaceInterval) })
	parts.Add("locations", func(ctx context.Context) { f.Locations.Run(ctx, locationInterval) })
	return parts
}
