package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
)

// groupCommitMax bounds the writes one shared transaction holds: past it, the transaction
// holds the write lock longer than other writers (health reports, the rollout engine)
// should wait.
const groupCommitMax = 64

// GroupCommit runs small writes that arrive together in shared transactions (group
// commit): a write that arrives while no transaction of the group runs starts one at once,
// and the writes that arrive while it runs share the next. So a lone write pays nothing
// more, and 100 concurrent launches pay a few dozen commits instead of 100: one dqlite
// commit per write was most of the daemon's CPU and the queue of writers at the end of
// 100 concurrent launches (issue 20). Do returns only after its write committed (or
// failed), so a caller that hears nil knows its write is durable.
//
// A write must be safe to run more than once: a shared transaction that fails is run again
// with each of its writes in a transaction of its own, so that one write's failure (or a
// busy retry) never fails the others.
type GroupCommit struct {
	db *Cluster

	mu      sync.Mutex
	queue   []*groupWrite
	running bool
}

// GroupWrite is one write of a group commit. An error wrapped by Refused is the write's
// own (its record changed meanwhile, a bound refused it): the shared transaction goes on
// without it, so a write must not write anything before it can return one. Any other
// error fails the shared transaction, and each write is then run alone.
type GroupWrite func(ctx context.Context, tx *sql.Tx) error

// groupWrite is one write waiting for its commit.
type groupWrite struct {
	ctx  context.Context
	f    GroupWrite
	err  error
	done chan struct{}

	// panicked holds what the write panicked with, to panic again in its caller's
	// goroutine: there a handler's recovery answers 500, where the group's goroutine would
	// take the daemon down.
	panicked *any
}

// call runs the write, turning a panic into an error that rolls the transaction back.
func (w *groupWrite) call(ctx context.Context, tx *sql.Tx) (err error) {
	w.panicked = nil
	defer func() {
		v := recover()
		if v != nil {
			w.panicked = &v
			err = fmt.Errorf("a write of a group commit panicked: %v", v)
		}
	}()

	return w.f(ctx, tx)
}

// NewGroupCommit returns a group commit over a cluster's database.
func NewGroupCommit(c *Cluster) *GroupCommit {
	return &GroupCommit{db: c}
}

// refusedError marks a write's own error (Refused).
type refusedError struct {
	err error
}

func (e refusedError) Error() string { return e.err.Error() }
func (e refusedError) Unwrap() error { return e.err }

// Refused marks err as a group write's own, returned before the write wrote anything: it
// reaches the write's caller (unwrapped) and leaves the other writes alone.
func Refused(err error) error {
	if err == nil {
		return nil
	}

	return refusedError{err: err}
}

// Do runs f in a transaction shared with the writes that arrive meanwhile and returns its
// error once the transaction ended. It waits for the commit even when ctx ends (f's
// statements then fail): a caller must not hear of a write that may still commit.
func (g *GroupCommit) Do(ctx context.Context, f GroupWrite) error {
	w := &groupWrite{ctx: ctx, f: f, done: make(chan struct{})}
	g.mu.Lock()
	g.queue = append(g.queue, w)
	if !g.running {
		g.running = true
		go g.run()
	}

	g.mu.Unlock()
	<-w.done
	if w.panicked != nil {
		panic(*w.panicked)
	}

	return w.err
}

// run commits what is queued, batch after batch, until the queue is empty.
func (g *GroupCommit) run() {
	for {
		g.mu.Lock()
		n := min(len(g.queue), groupCommitMax)
		if n == 0 {
			g.running = false
			g.mu.Unlock()
			return
		}

		batch := g.queue[:n:n]
		g.queue = g.queue[n:]
		g.mu.Unlock()
		g.commit(batch)
	}
}

// commit runs a batch in one transaction, or each of its writes alone when that fails,
// and answers every write.
func (g *GroupCommit) commit(batch []*groupWrite) {
	if len(batch) > 1 {
		err := g.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			for _, w := range batch {
				w.err = w.call(w.ctx, tx)
				if w.err != nil && !errors.As(w.err, new(refusedError)) {
					return w.err
				}
			}

			return nil
		})
		if err == nil {
			for _, w := range batch {
				w.err = unrefused(w.err)
				close(w.done)
			}

			return
		}
	}

	for _, w := range batch {
		// A refused write rolls its transaction back, which has nothing to undo.
		w.err = unrefused(g.db.Transaction(w.ctx, w.call))
		close(w.done)
	}
}

// unrefused is a write's error as its caller sees it: without the Refused mark.
func unrefused(err error) error {
	refused, ok := err.(refusedError)
	if ok {
		return refused.err
	}

	return err
}
