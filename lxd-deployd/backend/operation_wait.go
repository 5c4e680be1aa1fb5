package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// operationWaitChunk is how long one long poll of an operation's /wait lasts (seconds)
// when ctx has no deadline: the wait is asked again until the operation ends.
const operationWaitChunk = 30

// operation sends a request that starts an LXD operation (create, start, stop, delete, an
// instance update) and waits for it through GET /1.0/operations/{id}/wait, a long poll
// on a kept-alive connection; it cancels the operation when ctx ends, as wait does. The
// client's own Wait opens an event listener per operation, and each listener decodes
// every operation event of the project: 100 concurrent launches meant 100 listeners
// decoding the events of all 100 (issue 20).
//
// done says whether what the operation was for holds, for when LXD has forgotten the
// operation before its result was read (nil: nothing to check, the wait's error stands).
func operation(ctx context.Context, c DoHTTPer, project string, method string, p string, body any, done outcome) error {
	return operationOn(ctx, c, project, "", method, p, body, done)
}

// operationOn is operation with LXD's ?target= (a cluster member or @group; empty: none),
// which a raw request does not take from the client's UseTarget.
func operationOn(ctx context.Context, c DoHTTPer, project string, target string, method string, p string, body any, done outcome) error {
	resp, err := startOperation(ctx, c, project, target, method, p, body)
	if err != nil {
		return err
	}

	return waitOperation(ctx, c, project, resp, done)
}

// startOperation sends a request that starts an LXD operation and returns LXD's answer,
// or an error when LXD started none.
func startOperation(ctx context.Context, c DoHTTPer, project string, target string, method string, p string, body any) (*lxdapi.Response, error) {
	var start url.Values
	if target != "" {
		start = url.Values{"target": {target}}
	}

	// The request itself is not cut short: LXD may have started the operation anyway.
	resp, err := rawDo(context.WithoutCancel(ctx), c, method, p, project, start, body)
	if err != nil {
		return nil, err
	}

	if resp.Operation == "" {
		return nil, fmt.Errorf("LXD started no operation for %s %s", method, p)
	}

	return resp, nil
}

// waitOperation waits for the operation LXD's answer resp started (operation).
//
// A wait call that fails (LXD answering 500, a connection lost, LXD restarting) says
// nothing about the operation, which goes on in LXD: the wait is asked again, for up to
// waitUnreadableFor of failed calls in a row, and then the outcome is unknown
// (*OutcomeUnknownError). Returning the failed call's error instead made a launch drop
// its record while LXD went on to make the instance (issue 31.b: an orphan in LXD).
func waitOperation(ctx context.Context, c DoHTTPer, project string, resp *lxdapi.Response, done outcome) error {
	id, reach := operationOf(resp)
	var failingSince time.Time
	pause := 100 * time.Millisecond
	for {
		timeout := operationWaitChunk
		deadline, ok := ctx.Deadline()
		if ok {
			timeout = max(min(int(time.Until(deadline).Seconds())+1, operationWaitChunk), 1)
		}

		query := reach()
		query.Set("timeout", fmt.Sprint(timeout))
		resp, err := rawDo(ctx, c, "GET", "/1.0/operations/"+url.PathEscape(id)+"/wait", project, query, nil)
		if ctx.Err() != nil {
			_, _ = rawDo(context.WithoutCancel(ctx), c, "DELETE", "/1.0/operations/"+url.PathEscape(id), project, reach(), nil)
			return ctx.Err()
		}

		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) && done != nil {
			// LXD 5.0 forgets a finished operation 5 s after it ends: a wait that starts
			// later (a daemon slowed by load) reads what the operation was for instead of
			// failing an instance that LXD made.
			return forgotten(ctx, c, project, id, done)
		}

		if err != nil && !retryableWait(err) {
			return err
		}

		if err != nil {
			if failingSince.IsZero() {
				failingSince = time.Now()
			}

			if time.Since(failingSince) >= waitUnreadableFor {
				return &OutcomeUnknownError{Operation: id, Err: err}
			}

			select {
			case <-ctx.Done():
				_, _ = rawDo(context.WithoutCancel(ctx), c, "DELETE", "/1.0/operations/"+url.PathEscape(id), project, reach(), nil)
				return ctx.Err()
			case <-time.After(pause):
			}

			pause = min(2*pause, 2*time.Second)
			continue
		}

		failingSince, pause = time.Time{}, 100*time.Millisecond
		op, err := resp.MetadataAsOperation()
		if err != nil {
			return fmt.Errorf("decode LXD's operation %s: %w", id, err)
		}

		if op.StatusCode.IsFinal() {
			if op.Err != "" {
				return errors.New(op.Err)
			}

			return nil
		}
	}
}

// retryableWait reports whether a failed wait call may be asked again: LXD failing (5xx)
// or unreachable, not LXD refusing the wait itself (4xx: the operation is not there).
func retryableWait(err error) bool {
	var status lxdapi.StatusError
	if errors.As(err, &status) {
		return status.Status() >= 500
	}

	return true
}

// waitUnreadableFor is how long an operation's wait may fail in a row before its outcome
// is given up as unknown (a variable for tests).
var waitUnreadableFor = 30 * time.Second

// OutcomeUnknownError says LXD started an operation whose end could not be read: it may
// have done what it was for, or not, or still be running. What it was for must be kept
// in the books (an instance's record as creating or deleting) for reconcile to settle
// against what LXD shows later.
type OutcomeUnknownError struct {
	Operation string
	Err       error
}

func (e *OutcomeUnknownError) Error() string {
	return fmt.Sprintf("LXD's operation %s could not be followed to its end (%v): its outcome is unknown until LXD answers again", e.Operation, e.Err)
}

func (e *OutcomeUnknownError) Unwrap() error {
	return e.Err
}

// instancePath is an instance's URL in LXD's API.
func instancePath(name string) string {
	return "/1.0/instances/" + url.PathEscape(name)
}

// statePath is the URL of an instance's state.
func statePath(name string) string {
	return instancePath(name) + "/state"
}

// operationOf is the id of the operation an LXD answer started, and the query that reaches
// it. A member forwarding a request to the instance's member answers with the operation's
// URL plus "?project=...", so the id is the path's last element without the query; and on
// an LXD cluster the operation lives on the member that runs it (LXD 5.0 forgets a finished
// one from its cluster-wide list at once, so a wait sent to another member finds nothing:
// "Operation not found"), so the query targets that member.
func operationOf(resp *lxdapi.Response) (string, func() url.Values) {
	opURL, _, _ := strings.Cut(resp.Operation, "?")
	var started struct {
		Location string `json:"location"` // only this of the operation (a full decode is its metadata's maps)
	}

	_ = json.Unmarshal(resp.Metadata, &started)
	return path.Base(opURL), func() url.Values {
		query := url.Values{}
		if started.Location != "" && started.Location != "none" {
			query.Set("target", started.Location)
		}

		return query
	}
}
