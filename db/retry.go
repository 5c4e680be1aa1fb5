package db

import (
	sqldriver "database/sql/driver"
	"errors"
	"io"
	"net/http"
	"syscall"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// commitError marks an error returned by COMMIT: whether the change was applied is then
// unknown when the connection was lost, so it must not be retried blindly.
type commitError struct {
	err error
}

func (e commitError) Error() string { return e.err.Error() }
func (e commitError) Unwrap() error { return e.err }

// isConnectionLost reports whether err is the connection to the database leader breaking:
// the leader died or lost leadership mid-transaction.
func isConnectionLost(err error) bool {
	return errors.Is(err, sqldriver.ErrBadConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNREFUSED)
}

// isLostBeforeCommit reports whether the leader went away before COMMIT was sent: nothing
// was applied, so running the whole transaction again (against the new leader) is safe.
// This is what keeps writes answering through a leader's death instead of failing.
func isLostBeforeCommit(err error) bool {
	var commit commitError
	return isConnectionLost(err) && !errors.As(err, &commit)
}

// mapLostCommit turns a connection lost during COMMIT into a 503 that says what is known.
func mapLostCommit(err error) error {
	var commit commitError
	if err != nil && errors.As(err, &commit) && isConnectionLost(err) {
		return lxdapi.StatusErrorf(http.StatusServiceUnavailable, "the database leader changed while this change was committing: it may or may not have been applied; read it back before retrying")
	}

	return err
}
