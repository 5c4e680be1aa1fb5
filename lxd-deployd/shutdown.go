package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Shutdown budgets. Every wait on the way out has one, so that a daemon that cannot finish
// a step still exits, saying what it left undone: a cluster member whose peers are gone
// cannot hand its database role over, and used to wait out every timeout in turn (over
// 30 s) while its log repeated "no known leader". The database's own steps are bounded in
// db (Handover, Close). Together they keep a member without quorum under 10 s.
const (
	// serversWait lets requests in flight finish; the rest are cut off.
	serversWait = 3 * time.Second

	// operationsWait lets running operations finish before they are cancelled (reconcile
	// settles whatever a cancelled one left on the next start).
	operationsWait = 3 * time.Second

	// backgroundWait lets the cancelled background loops return.
	backgroundWait = 2 * time.Second

	// shutdownTimeout caps the whole stop, whatever the steps add up to.
	shutdownTimeout = 20 * time.Second
)

// stop finishes in-flight requests and operations, stops background work, hands the
// database role over and closes the database. What a step could not finish in its budget
// is logged and left behind; only a failure to close something is an error.
func (d *daemon) stop(ctx context.Context) error {
	var errs []error
	if d.events != nil {
		d.events.Close()
	}

	for _, server := range d.servers {
		serverCtx, cancel := context.WithTimeout(ctx, serversWait)
		err := server.Shutdown(serverCtx)
		cancel()
		if err != nil {
			d.logger.Warn("requests still running at shutdown were cut off", "waited", serversWait, "err", err)
			_ = server.Close()
		}
	}

	if d.life != nil {
		close(d.life.stopping)
	}

	if d.ops != nil {
		opsCtx, cancel := context.WithTimeout(ctx, operationsWait)
		d.ops.Shutdown(opsCtx)
		cancel()
	}

	if d.cancel != nil {
		d.cancel()
		if !waitAtMost(ctx, backgroundWait, d.background.Wait) {
			d.logger.Warn("background work still running at shutdown: exiting without it", "waited", backgroundWait)
		}
	}

	if d.governors != nil {
		_ = d.governors.Close()
	}

	// Held connections of shapes at zero are the one part of the data path through the
	// daemon: they are refused now (a hold timing out would refuse them too).
	if d.holds != nil {
		d.holds.Close()
	}

	// The door's load balancer outlives the daemon: the data path never passes through it,
	// and a restarted daemon adopts it (doc/traffic.md).
	if d.door != nil {
		_ = d.door.Close()
	}

	if d.db != nil {
		err := d.db.Handover(ctx)
		if err != nil {
			d.logger.Warn(err.Error())
		}

		err = d.db.Close(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("close database: %w", err))
		}
	}

	errs = append(errs, d.stopPrivateLXD())
	return errors.Join(errs...)
}

// waitAtMost runs wait and reports whether it returned within limit (and before ctx
// ended). A wait that did not is left running: the process is about to exit.
func waitAtMost(ctx context.Context, limit time.Duration, wait func()) bool {
	done := make(chan struct{})
	go func() {
		wait()
		close(done)
	}()

	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case <-done:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}
