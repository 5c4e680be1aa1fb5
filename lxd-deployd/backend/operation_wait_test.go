package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// flakyWaitLXD starts every operation and answers its first failures /wait calls with a
// 500 (an LXD or proxy failing, the operation going on), then with the operation ended.
type flakyWaitLXD struct {
	failures int64
	waits    atomic.Int64
	opErr    string
}

func (f *flakyWaitLXD) DoHTTP(req *http.Request) (*http.Response, error) {
	answer := lxdapi.Response{Type: lxdapi.AsyncResponse, StatusCode: http.StatusAccepted, Operation: "/1.0/operations/op1"}
	if strings.HasSuffix(req.URL.Path, "/wait") {
		if f.waits.Add(1) <= f.failures {
			answer = lxdapi.Response{Type: lxdapi.ErrorResponse, Code: http.StatusInternalServerError, Error: "injected"}
		} else {
			data, _ := json.Marshal(lxdapi.Operation{ID: "op1", StatusCode: lxdapi.Success, Err: f.opErr})
			if f.opErr != "" {
				data, _ = json.Marshal(lxdapi.Operation{ID: "op1", StatusCode: lxdapi.Failure, Err: f.opErr})
			}

			answer = lxdapi.Response{Type: lxdapi.SyncResponse, StatusCode: http.StatusOK, Metadata: data}
		}
	}

	data, _ := json.Marshal(answer)
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(data))}, nil
}

// A wait call that fails says nothing of the operation: the wait is asked again, and the
// operation's own end (success or failure) is what operation returns (issue 31.b).
func TestOperationWaitSurvivesFailedWaitCalls(t *testing.T) {
	lxd := &flakyWaitLXD{failures: 3}
	err := operation(context.Background(), lxd, "default", "POST", "/1.0/instances", nil, nil)
	if err != nil {
		t.Fatalf("want the operation's success after 3 failed waits, got %v", err)
	}

	if lxd.waits.Load() != 4 {
		t.Fatalf("want 4 wait calls, got %d", lxd.waits.Load())
	}

	failed := &flakyWaitLXD{failures: 2, opErr: "Failed creating instance record"}
	err = operation(context.Background(), failed, "default", "POST", "/1.0/instances", nil, nil)
	if err == nil || !strings.Contains(err.Error(), "Failed creating instance record") {
		t.Fatalf("want the operation's own failure, got %v", err)
	}

	var unknown *OutcomeUnknownError
	if errors.As(err, &unknown) {
		t.Fatalf("an operation that ended is not of unknown outcome: %v", err)
	}
}

// Waits failing for waitUnreadableFor in a row give the outcome up as unknown, never as
// the operation's failure.
func TestOperationWaitUnreadableIsUnknown(t *testing.T) {
	saved := waitUnreadableFor
	waitUnreadableFor = 300 * time.Millisecond
	t.Cleanup(func() { waitUnreadableFor = saved })

	err := operation(context.Background(), &flakyWaitLXD{failures: 1 << 30}, "default", "POST", "/1.0/instances", nil, nil)
	var unknown *OutcomeUnknownError
	if !errors.As(err, &unknown) || unknown.Operation != "op1" {
		t.Fatalf("want an OutcomeUnknownError for op1, got %v", err)
	}
}
