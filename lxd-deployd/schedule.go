package main

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/scheduler"
)

// Scheduled actions (doc/governors.md): one member, the holder of the schedule lease,
// fires them.
const (
	leaseSchedule = "schedule"

	// scheduleShown is how many next occurrences GET .../schedule lists per action.
	scheduleShown = 5
)

// runSchedule runs the scheduler newDaemon built on the holder of the schedule lease until
// ctx ends.
func (d *daemon) runSchedule(ctx context.Context) {
	interval := scheduler.Interval
	if d.config.testClockFile != "" {
		interval = scheduler.TestClockInterval
	}

	d.leases.Run(ctx, leaseSchedule, func(ctx context.Context, held lease.Lease) {
		d.scheduler.Fenced(held).Run(ctx, interval)
	})
}

// scheduleAPI serves a shape's schedule as the daemon runs it.
type scheduleAPI struct {
	db        *db.Cluster
	scheduler *scheduler.Scheduler
}

// get serves GET .../shapes/{shape}/schedule: each action with its next occurrences, by
// the daemon's clock, and the last action fired.
func (a scheduleAPI) get(r *http.Request) response.Response {
	ref, err := shapeFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var out any
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := refs.ShapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		out, err = a.scheduler.View(ctx, tx, shape.ID, scheduleShown)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(out)
}
