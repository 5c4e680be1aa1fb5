package lease

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
)

func newStore(t *testing.T) *db.Cluster {
	t.Helper()
	return dbtest.Open(t)
}

func TestAcquireRenewReleaseAndFencing(t *testing.T) {
	ctx := context.Background()
	store := newStore(t)
	a := NewManager(store, "a", 300*time.Millisecond, nil)
	b := NewManager(store, "b", 300*time.Millisecond, nil)

	la, err := a.Acquire(ctx, "task")
	if err != nil {
		t.Fatal(err)
	}

	_, err = b.Acquire(ctx, "task")
	if !errors.Is(err, ErrHeld) {
		t.Fatalf("a held lease must be refused to another member, got %v", err)
	}

	held, ok, err := b.Held(ctx, "task")
	if err != nil || !ok || held.Holder != "a" || held.Token != la.Token {
		t.Fatalf("Held: %+v %v %v", held, ok, err)
	}

	err = a.Renew(ctx, &la)
	if err != nil {
		t.Fatal(err)
	}

	// a stops renewing: once expired, b takes it with a larger token, and a's writes are
	// fenced off.
	time.Sleep(350 * time.Millisecond)
	lb, err := b.Acquire(ctx, "task")
	if err != nil {
		t.Fatal(err)
	}

	if lb.Token <= la.Token {
		t.Fatalf("the token must grow: %d then %d", la.Token, lb.Token)
	}

	if !errors.Is(a.Renew(ctx, &la), ErrLost) {
		t.Fatal("renewing a lease taken over must say it is lost")
	}

	err = store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error { return Check(ctx, tx, la) })
	if !errors.Is(err, ErrLost) {
		t.Fatalf("Check must fence a former holder, got %v", err)
	}

	err = store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error { return Check(ctx, tx, lb) })
	if err != nil {
		t.Fatalf("Check for the holder: %v", err)
	}

	// Releasing a lost lease does nothing; releasing a held one frees it at once, and the
	// token still grows.
	must(t, a.Release(ctx, la))
	_, ok, _ = a.Held(ctx, "task")
	if !ok {
		t.Fatal("a stale release must not free another holder's lease")
	}

	must(t, b.Release(ctx, lb))
	_, ok, _ = a.Held(ctx, "task")
	if ok {
		t.Fatal("a released lease must be free")
	}

	la2, err := a.Acquire(ctx, "task")
	if err != nil || la2.Token <= lb.Token {
		t.Fatalf("re-acquire after release: %+v %v", la2, err)
	}
}

// TestRunOneHolderAndHandover runs the same task on three managers: it runs on exactly one
// at a time, and when that one stops another takes over.
func TestRunOneHolderAndHandover(t *testing.T) {
	store := newStore(t)
	var running, maxRunning, starts atomic.Int32
	holders := make(chan string, 10)
	job := func(name string) func(ctx context.Context, l Lease) {
		return func(ctx context.Context, l Lease) {
			n := running.Add(1)
			for {
				m := maxRunning.Load()
				if n <= m || maxRunning.CompareAndSwap(m, n) {
					break
				}
			}

			starts.Add(1)
			holders <- name
			<-ctx.Done()
			running.Add(-1)
		}
	}

	var wg sync.WaitGroup
	cancels := map[string]context.CancelFunc{}
	for _, name := range []string{"a", "b", "c"} {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[name] = cancel
		m := NewManager(store, name, 600*time.Millisecond, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.Run(ctx, "task", job(name))
		}()
	}

	defer func() {
		for _, cancel := range cancels {
			cancel()
		}

		wg.Wait()
	}()

	first := <-holders
	time.Sleep(time.Second) // several renewals: the holder keeps it
	if starts.Load() != 1 {
		t.Fatalf("the holder must keep its lease while it renews: %d starts", starts.Load())
	}

	// A clean stop releases the lease: another member starts within a retry period.
	stopped := time.Now()
	cancels[first]()
	select {
	case next := <-holders:
		if next == first {
			t.Fatalf("%s stopped but ran again", first)
		}

		t.Logf("handover from %s to %s in %v", first, next, time.Since(stopped))
	case <-time.After(5 * time.Second):
		t.Fatal("nobody took the task over")
	}

	if maxRunning.Load() != 1 {
		t.Fatalf("the job ran %d times at once", maxRunning.Load())
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
