package backend

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// forgetfulLXD starts every operation and has forgotten it by the time its /wait comes (as
// LXD 5.0 does 5 s after an operation ends); its one instance is as held.
type forgetfulLXD struct {
	held *lxdapi.Instance
}

func (f forgetfulLXD) DoHTTP(req *http.Request) (*http.Response, error) {
	answer := lxdapi.Response{Type: lxdapi.AsyncResponse, StatusCode: http.StatusAccepted, Operation: "/1.0/operations/op1"}
	switch {
	case strings.HasSuffix(req.URL.Path, "/wait"):
		answer = lxdapi.Response{Type: lxdapi.ErrorResponse, Code: http.StatusNotFound, Error: "Operation not found"}
	case req.Method == "GET" && f.held == nil:
		answer = lxdapi.Response{Type: lxdapi.ErrorResponse, Code: http.StatusNotFound, Error: "Instance not found"}
	case req.Method == "GET":
		data, _ := json.Marshal(f.held)
		answer = lxdapi.Response{Type: lxdapi.SyncResponse, StatusCode: http.StatusOK, Metadata: data}
	}

	data, _ := json.Marshal(answer)
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(data))}, nil
}

// A wait that finds its operation forgotten reads what the operation was for: done is
// success, not done is an error naming the operation and what LXD shows.
func TestOperationForgottenReadsTheOutcome(t *testing.T) {
	running := &lxdapi.Instance{Name: "web1", StatusCode: lxdapi.Running, CreatedAt: time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC), Config: map[string]string{ConfigDeployment: "dep1"}}
	stopped := &lxdapi.Instance{Name: "web1", StatusCode: lxdapi.Stopped, Config: map[string]string{ConfigDeployment: "dep1", configProtection: "true"}}
	start := lxdapi.InstanceStatePut{Action: "start"}
	cases := []struct {
		name   string
		held   *lxdapi.Instance
		method string
		path   string
		body   any
		done   outcome
		want   string // "" for success, else a part of the error
	}{
		{"created", running, "POST", "/1.0/instances", nil, made("web1", running.CreatedAt), ""},
		{"create left nothing", nil, "POST", "/1.0/instances", nil, made("web1", running.CreatedAt), `forgot operation op1 before its result was read, and LXD has no instance "web1"`},
		{"an older instance by that name", running, "POST", "/1.0/instances", nil, made("web1", running.CreatedAt.Add(time.Second)), `LXD's instance "web1" was there before this create`},
		{"started", running, "PUT", statePath("web1"), start, status("web1", "start"), ""},
		{"start did not run", stopped, "PUT", statePath("web1"), start, status("web1", "start"), `instance "web1" is Stopped in LXD, not Running`},
		{"stopped", stopped, "PUT", statePath("web1"), nil, status("web1", "stop"), ""},
		{"deleted", nil, "DELETE", instancePath("web1"), nil, gone("web1"), ""},
		{"not deleted", running, "DELETE", instancePath("web1"), nil, gone("web1"), `LXD still has instance "web1"`},
		{"protection lifted", running, "PUT", instancePath("web1"), nil, configured("web1", map[string]string{configProtection: ""}), ""},
		{"protection kept", stopped, "PUT", instancePath("web1"), nil, configured("web1", map[string]string{configProtection: ""}), `has security.protection.delete="true" in LXD`},
		{"nothing to read", running, "PUT", statePath("web1"), nil, nil, "Operation not found"},
		{"an action without a state", running, "PUT", statePath("web1"), nil, status("web1", "snapshot"), "Operation not found"},
	}

	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := operation(context.Background(), forgetfulLXD{held: c.held}, "default", c.method, c.path, c.body, c.done)
			if c.want == "" && err != nil {
				t.Fatalf("want success, got %v", err)
			}

			if c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("want an error with %q, got %v", c.want, err)
			}
		})
	}
}
