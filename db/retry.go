package db

import (
	"context"
	"crypto/rand"
	"database/sql"
	sqldriver "database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"syscall"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// Losing the leader during COMMIT leaves the outcome unknown to the client: the entry may
// have reached a majority (and will be applied) or not (and never will be). A write that
// then fails would make an acknowledged-looking change disappear or, retried blindly, apply
// twice. So every transaction that changes something also writes a random marker row; when
// COMMIT's connection breaks, the marker is looked up through the new leader. dqlite runs
// a raft barrier before a new leader serves a query, which commits every entry of earlier
// terms it holds and makes those it lacks impossible to commit: the lookup is definitive.

// commitError marks an error returned by COMMIT, with the marker the transaction wrote
// (empty: it changed nothing).
type commitError struct {
	err    error
	marker string
}

func (e commitError) Error() string { return e.err.Error() }
func (e commitError) Unwrap() error { return e.err }

// markCommit writes a commit marker when the transaction changed rows since before (the
// connection's total_changes() when it began; -1 while the schema is being updated), and
// returns it.
func markCommit(ctx context.Context, tx *sql.Tx, before int64) (string, error) {
	if before < 0 {
		return "", nil
	}

	var after int64
	err := tx.QueryRowContext(ctx, "SELECT total_changes()").Scan(&after)
	if err != nil {
		return "", fmt.Errorf("count changes: %w", err)
	}

	if after == before {
		return "", nil
	}

	b := make([]byte, 16)
	_, _ = rand.Read(b)
	marker := hex.EncodeToString(b)
	_, err = tx.ExecContext(ctx, "INSERT INTO commit_markers (marker, created_at) VALUES (?, ?)", marker, time.Now().UTC())
	if err != nil {
		return "", fmt.Errorf("write commit marker: %w", err)
	}

	return marker, nil
}

// PruneCommitMarkers drops markers older than before: a lost COMMIT is resolved within
// seconds, so they are only kept for a while.
func PruneCommitMarkers(ctx context.Context, tx *sql.Tx, before time.Time) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM commit_markers WHERE created_at < ?", before.UTC())
	if err != nil {
		return fmt.Errorf("prune commit markers: %w", err)
	}

	return nil
}

// resolveLostCommit reads back whether a transaction whose COMMIT lost its connection was
// applied: nil when it was, an error that retries the transaction when it was not, and
// the original error when the lookup itself fails.
func (c *Cluster) resolveLostCommit(ctx context.Context, lost error) error {
	var commit commitError
	errors.As(lost, &commit)
	if commit.marker == "" {
		return errLostBeforeCommit // nothing was written: running it again is harmless
	}

	for attempt := 0; attempt < 10; attempt++ {
		var n int
		err := c.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM commit_markers WHERE marker = ?", commit.marker).Scan(&n)
		if err == nil {
			if n == 1 {
				return nil
			}

			return errLostBeforeCommit
		}

		select {
		case <-ctx.Done():
			return lost
		case <-time.After(time.Duration(attempt+1) * 50 * time.Millisecond):
		}
	}

	return lost
}

// errLostBeforeCommit says a transaction was not applied and may run again.
var errLostBeforeCommit = fmt.Errorf("transaction not applied: %w", io.ErrUnexpectedEOF)

// isConnectionLost reports whether err is the connection to the database leader breaking:
// the leader died or lost leadership mid-transaction.
func isConnectionLost(err error) bool {
	return errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED)
}

// Unavailable reports whether err says the database could not be reached rather than
// refused the work: no leader, the connection to it lost, or busy past the transaction's
// retries. Work that must happen before a member serves (its registration at start) waits
// out an election with it instead of exiting.
func Unavailable(err error) bool {
	return isRetryable(err) || isConnectionLost(err)
}

// isLostCommit reports whether COMMIT itself lost its connection.
func isLostCommit(err error) bool {
	var commit commitError
	return errors.As(err, &commit) && isConnectionLost(err)
}

// isLostBeforeCommit reports whether the transaction was not applied because the leader
// went away: before COMMIT was sent, or during it as the marker showed. Running the whole
// transaction again against the new leader is then safe, and is what keeps writes
// answering through a leader's death instead of failing.
func isLostBeforeCommit(err error) bool {
	var commit commitError
	return isConnectionLost(err) && !errors.As(err, &commit)
}

// mapLostCommit turns a COMMIT whose outcome could not be read back into a 503 that says
// what is known.
func mapLostCommit(err error) error {
	if err != nil && isLostCommit(err) {
		return lxdapi.StatusErrorf(http.StatusServiceUnavailable, "the database leader changed while this change was committing and its outcome could not be read back: read it before retrying")
	}

	return err
}
