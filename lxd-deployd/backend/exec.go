package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// ExecResult is what one command run inside an instance gave.
type ExecResult struct {
	ExitCode int

	// Output is stdout then stderr, at most the limit ExecCheck was given.
	Output string
}

// ExecCheck runs a health check command inside an instance through LXD exec without
// websockets: one POST, then one long-poll of the operation's /wait. The websocket exec
// (lxc exec's way) costs four websocket upgrades plus an /1.0/events listener per call, on
// both sides; this is what made 1,000 checked instances saturate the daemon (doc/health.md
// has the figures). c is meant to keep its connections alive (LXD.ChecksClient): that saves
// LXD little (12.4 ms of CPU per exec against 12.7 ms, BenchmarkExecCheckCapacity), forking
// the exec is its cost, but it saves the daemon a dial and two goroutines per request. The
// POST is marked as safe to send again, so that one written on a connection LXD has just
// closed is retried by the transport: a health check is run twice at worst.
//
// With recordOutput, LXD writes stdout and stderr to log files that are read (at most
// limit bytes) and deleted after the command ends: four more plain requests, so callers
// ask for output only when they keep it. Without it the output goes to /dev/null.
//
// LXD cannot cancel such an exec (its operation is not cancellable): when ctx ends first
// the error says so, and the caller kills the process by its marker (KillCheck).
func ExecCheck(ctx context.Context, c DoHTTPer, project string, name string, command []string, env map[string]string, recordOutput bool, limit int) (*ExecResult, error) {
	post := lxdapi.InstanceExecPost{Command: command, Environment: env, WaitForWS: false, RecordOutput: recordOutput}
	resp, err := rawDo(ctx, replayable{c}, "POST", "/1.0/instances/"+url.PathEscape(name)+"/exec", project, nil, post)
	if err != nil {
		return nil, err
	}

	if resp.Operation == "" {
		return nil, fmt.Errorf("LXD started no operation for the exec")
	}

	opID, target := operationOf(resp)

	// The wait's own timeout is a backstop; ctx ends the request first.
	timeout := 30
	deadline, ok := ctx.Deadline()
	if ok {
		timeout = max(int(time.Until(deadline).Seconds())+1, 1)
	}

	query := target()
	query.Set("timeout", fmt.Sprint(timeout))

	resp, err = rawDo(ctx, c, "GET", "/1.0/operations/"+url.PathEscape(opID)+"/wait", project, query, nil)
	if err != nil {
		if Expired(ctx) {
			return nil, fmt.Errorf("no answer within the check's timeout: %w: %w", ErrCommandRunning, context.DeadlineExceeded)
		}

		return nil, err
	}

	var op execOperation
	err = json.Unmarshal(resp.Metadata, &op)
	if err != nil {
		return nil, fmt.Errorf("decode LXD's exec operation: %w", err)
	}

	if op.StatusCode == lxdapi.Running {
		return nil, fmt.Errorf("no answer within the check's timeout: %w: %w", ErrCommandRunning, context.DeadlineExceeded)
	}

	if op.Err != "" {
		return nil, fmt.Errorf("%w: %s", ErrExecFailed, op.Err)
	}

	result := &ExecResult{ExitCode: op.Metadata.Return}
	if recordOutput {
		var out strings.Builder
		for _, fd := range []string{"1", "2"} {
			file := op.Metadata.Output[fd]
			if file == "" {
				continue
			}

			logPath := "/1.0/instances/" + url.PathEscape(name) + "/logs/" + url.PathEscape(path.Base(file))
			text, err := rawGetText(ctx, c, logPath, project, limit-out.Len())
			if err == nil {
				out.WriteString(text)
			}

			// Deleted even when unread, or they pile up in LXD's log directory.
			_, _ = rawDo(context.WithoutCancel(ctx), c, "DELETE", logPath, project, nil, nil)
		}

		result.Output = out.String()
	}

	return result, nil
}

// Expired says whether ctx has ended or its deadline has passed. A connection's deadline
// (ChecksClient's) can fail a read a moment before the context's own timer marks it done:
// asking only ctx.Err() then took a timed-out check for an error of LXD, and its process
// was never killed.
func Expired(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}

	deadline, ok := ctx.Deadline()
	return ok && !time.Now().Before(deadline)
}

// execOperation is what ExecCheck reads of a finished exec operation: decoding only this
// skips the generic operation's maps, a decode per check.
type execOperation struct {
	StatusCode lxdapi.StatusCode `json:"status_code"`
	Err        string            `json:"err"`
	Metadata   struct {
		Return int               `json:"return"`
		Output map[string]string `json:"output"` // fd ("1", "2") to its log file, with record-output
	} `json:"metadata"`
}

// replayable marks its requests as safe to send twice: Go's transport then sends one again
// when the kept-alive connection it was written on turns out closed. An empty
// X-Idempotency-Key marks it without sending the header (net/http's Transport docs).
type replayable struct{ c DoHTTPer }

func (r replayable) DoHTTP(req *http.Request) (*http.Response, error) {
	req.Header["X-Idempotency-Key"] = nil
	return r.c.DoHTTP(req)
}
