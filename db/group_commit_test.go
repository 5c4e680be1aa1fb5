package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

func groupCommitTable(t *testing.T) *Cluster {
	t.Helper()
	c := newTestCluster(t)
	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "CREATE TABLE group_commit_test (n INTEGER UNIQUE)")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	return c
}

func groupCommitRows(t *testing.T, c *Cluster) map[int]bool {
	t.Helper()
	rows := map[int]bool{}
	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		values, err := tx.QueryContext(ctx, "SELECT n FROM group_commit_test")
		if err != nil {
			return err
		}

		defer func() { _ = values.Close() }()
		for values.Next() {
			var n int
			err = values.Scan(&n)
			if err != nil {
				return err
			}

			rows[n] = true
		}

		return values.Err()
	})
	if err != nil {
		t.Fatal(err)
	}

	return rows
}

// Concurrent writes share transactions, each caller hears its own result after the commit,
// and a write refused before it wrote leaves the others alone. A write that fails its
// shared transaction (a constraint) is run again alone, so only it fails.
func TestGroupCommit(t *testing.T) {
	c := groupCommitTable(t)
	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO group_commit_test (n) VALUES (1000)")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	g := NewGroupCommit(c)
	const writers = 100
	var runs atomic.Int64
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := 0; i < writers; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = g.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
				runs.Add(1)
				switch {
				case i%10 == 3:
					return Refused(lxdapi.StatusErrorf(http.StatusConflict, "write %d refused", i))
				case i == 57:
					// Fails the shared transaction: a value committed before.
					_, err := tx.ExecContext(ctx, "INSERT INTO group_commit_test (n) VALUES (?)", 1000)
					return err
				}

				_, err := tx.ExecContext(ctx, "INSERT INTO group_commit_test (n) VALUES (?)", i)
				return err
			})
		}(i)
	}

	wg.Wait()
	rows := groupCommitRows(t, c)
	for i, err := range errs {
		switch {
		case i%10 == 3:
			if !lxdapi.StatusErrorCheck(err, http.StatusConflict) || errors.As(err, new(refusedError)) {
				t.Errorf("write %d: %v, want its own 409 without the mark", i, err)
			}

			if rows[i] {
				t.Errorf("write %d was refused but its row is there", i)
			}
		case i == 57:
			if err == nil {
				t.Errorf("write 57 broke a constraint but succeeded")
			}
		default:
			if err != nil || !rows[i] {
				t.Errorf("write %d: %v, row there: %v", i, err, rows[i])
			}
		}
	}

	if len(rows) != 90 {
		t.Errorf("%d rows, want the 89 writes that were neither refused nor broken and the one before", len(rows))
	}

	t.Logf("%d writes ran %d times", writers, runs.Load())
}

// A lone write runs at once, in a transaction of its own, and the group is idle after.
func TestGroupCommitLone(t *testing.T) {
	c := groupCommitTable(t)
	g := NewGroupCommit(c)
	for i := 0; i < 3; i++ {
		err := g.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO group_commit_test (n) VALUES (?)", i)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}

	err := g.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		return fmt.Errorf("no")
	})
	if err == nil || err.Error() != "no" {
		t.Fatalf("a failed lone write: %v", err)
	}

	if len(groupCommitRows(t, c)) != 3 {
		t.Fatal("rows missing")
	}

	// The group's goroutine ends just after answering the last write.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
		g.mu.Lock()
		running, queued := g.running, len(g.queue)
		g.mu.Unlock()
		if !running && queued == 0 {
			break
		}

		if time.Now().After(deadline) {
			t.Fatalf("the group is still running (%v) or has %d queued", running, queued)
		}
	}
}

// A write that panics panics in its caller's goroutine, not the group's, and the writes
// sharing its transaction commit without it.
func TestGroupCommitPanic(t *testing.T) {
	c := groupCommitTable(t)
	g := NewGroupCommit(c)
	var wg sync.WaitGroup
	recovered := make([]any, 10)
	errs := make([]error, 10)
	for i := 0; i < 10; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { recovered[i] = recover() }()
			errs[i] = g.Do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, "INSERT INTO group_commit_test (n) VALUES (?)", i)
				if i == 4 {
					panic("write 4")
				}

				return err
			})
		}()
	}

	wg.Wait()
	rows := groupCommitRows(t, c)
	for i := range 10 {
		if i == 4 {
			if recovered[i] != "write 4" || rows[i] {
				t.Errorf("write 4 recovered %v, row there: %v", recovered[i], rows[i])
			}

			continue
		}

		if recovered[i] != nil || errs[i] != nil || !rows[i] {
			t.Errorf("write %d: recovered %v, %v, row there: %v", i, recovered[i], errs[i], rows[i])
		}
	}
}
