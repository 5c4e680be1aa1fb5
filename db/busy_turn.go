package db

import (
	"context"
	"math/rand/v2"
	"time"
)

// busyTurn is a transaction's place among this daemon's transactions that found the
// database busy: they retry one at a time, in turn, each as soon as the holder is done,
// instead of each on its own growing backoff. 100 concurrent launches retried 1,301 times
// on backoffs of up to 250 ms and took 1.3 times the same LXD work done directly
// (BenchmarkScale at 1,000 instances): most of their wait was idle, and every retry
// collided again with the others. A transaction that finds the database busy for the first
// time waits for its turn (another writer of this daemon commits meanwhile), then retries
// with short pauses while the busy writer is another daemon's or a new one's.
type busyTurn struct {
	held bool
}

// take waits for the turn, or for ctx.
func (t *busyTurn) take(ctx context.Context, turns chan struct{}) error {
	if turns == nil {
		t.held = true // a Cluster built without one (tests): no queue
		return nil
	}

	select {
	case turns <- struct{}{}:
		t.held = true
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// release gives the turn to the next transaction waiting, if held.
func (t *busyTurn) release(turns chan struct{}) {
	if !t.held || turns == nil {
		return
	}

	t.held = false
	<-turns
}

// busyPause is the pause of the transaction whose turn it is between tries: short, since
// a busy database is a commit in progress; growing to 25 ms so that a long writer
// (another daemon's) is not hammered.
func busyPause(attempt int) time.Duration {
	delay := min(time.Duration(attempt+1)*2*time.Millisecond, 25*time.Millisecond)
	return delay/2 + rand.N(delay/2+1)
}
