package backend

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// ErrCommandRunning says an exec check's command was started (LXD answered its POST with
// an operation) but had not ended when the check's timeout passed. Whether that is the
// command's fault or LXD's is for the caller to find out (Answers): a frozen LXD holds the
// operation's /wait as long as a hung command does.
var ErrCommandRunning = errors.New("the command was still running")

// ErrExecFailed says LXD ran an exec check's operation and it failed (rather than the
// command exiting with a code): the command could not be started.
var ErrExecFailed = errors.New("LXD could not run the command")

// Answers asks LXD for GET /1.0 within limit: whether LXD itself answers now. A check that
// failed while LXD does not answer is no verdict on the instance.
func Answers(ctx context.Context, c DoHTTPer, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	_, err := rawDo(ctx, c, "GET", "/1.0", "", nil, nil)
	if err != nil {
		return fmt.Errorf("LXD did not answer GET /1.0 within %s: %w", limit, err)
	}

	return nil
}

// InstanceStatus returns LXD's status of an instance (Running, Stopped, Frozen, Error):
// an exec LXD refused is a verdict when the instance is not running, and no verdict
// otherwise.
func InstanceStatus(ctx context.Context, c DoHTTPer, project string, name string) (string, error) {
	resp, err := rawDo(ctx, c, "GET", "/1.0/instances/"+url.PathEscape(name)+"/state", project, nil, nil)
	if err != nil {
		return "", err
	}

	var state struct {
		Status string `json:"status"`
	}

	err = json.Unmarshal(resp.Metadata, &state)
	if err != nil {
		return "", fmt.Errorf("decode LXD's instance state: %w", err)
	}

	return state.Status, nil
}
