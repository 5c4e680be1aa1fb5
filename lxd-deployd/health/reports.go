package health

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
)

// Defaults of a Reports batcher.
const (
	// DefaultReportWindow is how long the first report of a batch waits for others: a
	// report is answered that much later, and at a hundred reports a second a commit is
	// shared by about five.
	DefaultReportWindow = 50 * time.Millisecond

	// DefaultReportBatch ends a batch early: past it, a batch's transaction holds the
	// database's write lock longer than other writers (launches) should wait.
	DefaultReportBatch = 128
)

// ReportFunc records one report in tx and returns the change of verdict it made, if any.
// An error that is an LXD API status error (or sql.ErrNoRows) is the report's own (its
// instance was deleted, its shape has no ttl check) and leaves the batch's other reports
// alone, so a ReportFunc must not write before it can fail with one; any other error
// fails the batch's transaction and reaches every report of it.
type ReportFunc func(ctx context.Context, tx *sql.Tx) (*Change, error)

// Reports records the reports instances send (ttl checks) in batches: the reports that
// arrive together share one transaction, as one dqlite commit per report was most of
// what a report cost (about 4.6 ms of daemon CPU each, 1,000 instances reporting every
// 10 s took 44% of a core). Every member of a daemon cluster may receive reports, so each
// daemon has its own batcher, apart from the checker (which runs on one member only).
// Record answers only after the report's transaction committed: an acknowledged report is
// recorded, and a failed batch's error reaches each of its callers.
type Reports struct {
	DB *db.Cluster

	// Window and Batch (zero: the defaults) bound how long and how many reports gather.
	Window time.Duration
	Batch  int

	// Notify is told of each verdict that moved, after its batch committed.
	Notify func(ctx context.Context, change *Change)

	// Metrics hears of each batch's size.
	Metrics *metrics.Metrics

	mu      sync.Mutex
	queue   []*queuedReport
	running bool
	full    chan struct{} // closed when the gathering batch reaches Batch
}

// queuedReport is one report waiting for its batch's commit.
type queuedReport struct {
	ctx    context.Context
	f      ReportFunc
	change *Change
	err    error
	done   chan struct{}
}

// Record queues a report for the next batch and waits until the batch is committed (or
// failed), or ctx ends. A report whose caller gave up before its batch began is left out.
func (r *Reports) Record(ctx context.Context, f ReportFunc) (*Change, error) {
	q := &queuedReport{ctx: ctx, f: f, done: make(chan struct{})}
	r.mu.Lock()
	r.queue = append(r.queue, q)
	if !r.running {
		r.running = true
		r.full = make(chan struct{})
		go r.run()
	}

	if len(r.queue) == r.batchSize() {
		close(r.full) // run closes it itself when more than a batch is left over
	}

	r.mu.Unlock()
	select {
	case <-q.done:
		return q.change, q.err
	case <-ctx.Done():
		// The batch may still record it: the caller hears that it is not known to be.
		return nil, ctx.Err()
	}
}

func (r *Reports) batchSize() int {
	if r.Batch <= 0 {
		return DefaultReportBatch
	}

	return r.Batch
}

// run commits batches until the queue is empty: each waits Window for more reports (or
// until it is full), then is committed in one transaction.
func (r *Reports) run() {
	window := r.Window
	if window <= 0 {
		window = DefaultReportWindow
	}

	for {
		r.mu.Lock()
		full := r.full
		r.mu.Unlock()
		timer := time.NewTimer(window)
		select {
		case <-timer.C:
		case <-full:
			timer.Stop()
		}

		r.mu.Lock()
		n := min(len(r.queue), r.batchSize())
		batch := r.queue[:n:n]
		r.queue = r.queue[n:]
		r.full = make(chan struct{})
		if len(r.queue) >= r.batchSize() {
			close(r.full)
		}

		r.mu.Unlock()
		r.commit(batch)

		r.mu.Lock()
		if len(r.queue) == 0 {
			r.running = false
			r.mu.Unlock()
			return
		}

		r.mu.Unlock()
	}
}

// commit records a batch in one transaction and answers each of its reports.
func (r *Reports) commit(batch []*queuedReport) {
	live := batch[:0:0]
	for _, q := range batch {
		if q.ctx.Err() != nil {
			q.err = q.ctx.Err()
			close(q.done)
			continue
		}

		live = append(live, q)
	}

	if len(live) == 0 {
		return
	}

	r.Metrics.HealthReportBatch(len(live))
	ctx := context.Background()
	err := r.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, q := range live {
			q.change, q.err = q.f(ctx, tx)
			if q.err != nil && !ownError(q.err) {
				return q.err
			}
		}

		return nil
	})

	for _, q := range live {
		if err != nil {
			q.change, q.err = nil, err
		}

		if q.change != nil && r.Notify != nil {
			r.Notify(context.WithoutCancel(q.ctx), q.change)
		}

		close(q.done)
	}
}

// ownError says whether a report's error is its own rather than the batch's.
func ownError(err error) bool {
	_, ok := lxdapi.StatusErrorMatch(err)
	return ok || errors.Is(err, sql.ErrNoRows)
}
