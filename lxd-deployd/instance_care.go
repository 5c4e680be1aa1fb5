package main

import (
	"context"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/care"
)

// healthConcurrency bounds the checks running at once across all shapes. LXD's exec rate
// is flat from 2 to 16 at once and falls past that (doc/health.md); 16 leaves room for
// check commands that sleep.
const healthConcurrency = 16

// instanceCare runs the health checker and the fleet's keepers newDaemon built while this
// member holds the instances lease (package care), until ctx ends.
func (d *daemon) instanceCare(ctx context.Context) {
	care.Run(ctx, care.Config{Leases: d.leases, Lease: leaseInstances, Fleet: d.fleet, Checker: d.checker, Logger: d.logger, Wait: backgroundWait})
}
