package db

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Many writers at once all commit, retrying in turn; the turn is free again afterwards.
func TestBusyWritersTakeTurns(t *testing.T) {
	c := newTestCluster(t)
	ctx := context.Background()
	err := c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "CREATE TABLE busy_turn_test (n INTEGER)")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	const writers = 40
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs <- c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
				var n int
				err := tx.QueryRowContext(ctx, "SELECT count(*) FROM busy_turn_test").Scan(&n)
				if err != nil {
					return err
				}

				_, err = tx.ExecContext(ctx, "INSERT INTO busy_turn_test (n) VALUES (?)", i)
				return err
			})
		}(i)
	}

	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("a writer failed: %v", err)
		}
	}

	var n int
	err = c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "SELECT count(*) FROM busy_turn_test").Scan(&n)
	})
	if err != nil || n != writers {
		t.Fatalf("%d rows (%v), want %d", n, err, writers)
	}

	if len(c.busyTurn) != 0 {
		t.Fatal("the busy turn is still held after every writer ended")
	}

	t.Logf("%d writers at once: %d retries", writers, c.Retries())
}

// A transaction waiting for its turn gives up with its context.
func TestBusyTurnWaitEndsWithContext(t *testing.T) {
	turns := make(chan struct{}, 1)
	var holder, waiter busyTurn
	if err := holder.take(context.Background(), turns); err != nil || !holder.held {
		t.Fatalf("first take: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := waiter.take(ctx, turns)
	if err == nil || waiter.held {
		t.Fatalf("a take while held: %v, held %v", err, waiter.held)
	}

	holder.release(turns)
	holder.release(turns) // released once only
	if err := waiter.take(context.Background(), turns); err != nil || len(turns) != 1 {
		t.Fatal(fmt.Sprint("take after release: ", err))
	}
}
