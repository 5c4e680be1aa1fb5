package backend

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"

	lxd "github.com/canonical/lxd/client"
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
// has the figures). The LXD client's unix transport opens a connection per request (it
// disables keep-alives); kept-alive connections were measured and left alone: LXD spent
// 12.4 ms of CPU per exec with them and 12.7 ms without, and ran no more execs a second
// (BenchmarkExecCheckCapacity): forking the exec is LXD's cost, not the connection.
//
// With recordOutput, LXD writes stdout and stderr to log files that are read (at most
// limit bytes) and deleted after the command ends: four more plain requests, so callers
// ask for output only when they keep it. Without it the output goes to /dev/null.
//
// LXD cannot cancel such an exec (its operation is not cancellable): when ctx ends first
// the error says so, and the caller kills the process by its marker (KillCheck).
func ExecCheck(ctx context.Context, c lxd.InstanceServer, project string, name string, command []string, env map[string]string, recordOutput bool, limit int) (*ExecResult, error) {
	post := lxdapi.InstanceExecPost{Command: command, Environment: env, WaitForWS: false, RecordOutput: recordOutput}
	resp, err := rawDo(ctx, c, "POST", "/1.0/instances/"+url.PathEscape(name)+"/exec", project, nil, post)
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
		if ctx.Err() != nil {
			return nil, fmt.Errorf("no answer within the check's timeout: %w", ctx.Err())
		}

		return nil, err
	}

	var op lxdapi.Operation
	err = json.Unmarshal(resp.Metadata, &op)
	if err != nil {
		return nil, fmt.Errorf("decode LXD's exec operation: %w", err)
	}

	if op.StatusCode == lxdapi.Running {
		return nil, fmt.Errorf("no answer within the check's timeout: %w", context.DeadlineExceeded)
	}

	if op.Err != "" {
		return nil, fmt.Errorf("%s", op.Err)
	}

	code, _ := op.Metadata["return"].(float64)
	result := &ExecResult{ExitCode: int(code)}
	if recordOutput {
		outputs, _ := op.Metadata["output"].(map[string]any)
		var out strings.Builder
		for _, fd := range []string{"1", "2"} {
			file, _ := outputs[fd].(string)
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
