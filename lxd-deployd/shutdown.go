package main

import (
	"context"
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

	// startFailureWait caps closing what a start that failed had opened.
	startFailureWait = 10 * time.Second
)

// stop finishes in-flight requests and operations, stops background work, hands the
// database role over and closes the database. What a step could not finish in its budget
// is logged and left behind (the background loops that did not stop are named); only a
// failure to close something is an error. The daemon may have failed to start: what start
// did not reach is stopped all the same.
func (d *daemon) stop(ctx context.Context) error {
	d.events.Close()
	for _, server := range d.servers {
		serverCtx, cancel := context.WithTimeout(ctx, serversWait)
		err := server.Shutdown(serverCtx)
		cancel()
		if err != nil {
			d.logger.Warn("requests still running at shutdown were cut off", "waited", serversWait, "err", err)
			_ = server.Close()
		}
	}

	close(d.stopping)
	opsCtx, cancel := context.WithTimeout(ctx, operationsWait)
	d.ops.Shutdown(opsCtx)
	cancel()

	err := d.tasks.Stop(ctx, backgroundWait)
	if err != nil {
		// A member without quorum cannot release its leases in time, and must still exit
		// promptly and cleanly (doc/clustering.md, "Stopping a member").
		d.logger.Warn("background work still running at shutdown: exiting without it", "waited", backgroundWait, "err", err)
	}

	// Held connections of shapes at zero are the one part of the data path through the
	// daemon: they are refused now (a hold timing out would refuse them too).
	d.doors.CloseHolds()

	return d.opened.close(ctx, d.logger)
}
