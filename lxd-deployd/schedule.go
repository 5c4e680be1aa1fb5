package main

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

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

	// scheduleInterval is how often the holder looks for due actions: cron's resolution is
	// the minute, so an action fires within seconds of its time.
	scheduleInterval = 2 * time.Second

	// testClockInterval is that with a test clock, so that tests do not wait.
	testClockInterval = 200 * time.Millisecond

	// scheduleShown is how many next occurrences GET .../schedule lists per action.
	scheduleShown = 5
)

// runSchedule runs the scheduler newDaemon built on the holder of the schedule lease until
// ctx ends.
func (d *daemon) runSchedule(ctx context.Context) {
	interval := scheduleInterval
	if d.config.testClockFile != "" {
		interval = testClockInterval
	}

	d.leases.Run(ctx, leaseSchedule, func(ctx context.Context, held lease.Lease) {
		d.scheduler.Fenced(held).Run(ctx, interval)
	})
}

// scheduleClock is the scheduler's clock: time.Now, or, for tests only, the time written
// in --test-clock-file (RFC 3339, read at each look, so a test moves it by rewriting the
// file; doc/daemon.md). Only the scheduler reads it: leases, TTLs and logs keep real time.
func scheduleClock(path string, logger *slog.Logger) (scheduler.Clock, error) {
	if path == "" {
		return time.Now, nil
	}

	read := func() (time.Time, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return time.Time{}, err
		}

		return time.Parse(time.RFC3339, strings.TrimSpace(string(data)))
	}

	first, err := read()
	if err != nil {
		return nil, fmt.Errorf("--test-clock-file %s: %w (write an RFC 3339 time in it)", path, err)
	}

	logger.Warn("the scheduler runs on a test clock: never use --test-clock-file outside tests", "file", path, "now", first)
	var mu sync.Mutex
	last := first
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t, err := read()
		if err == nil {
			last = t
		}

		// A file caught half written keeps the last time read.
		return last
	}, nil
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
