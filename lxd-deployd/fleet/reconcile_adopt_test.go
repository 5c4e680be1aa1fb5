package fleet

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// adoptLXD is the part of LXD reconcile's adopt talks to: one project of instances by name,
// with what LXD itself answers to a start of a running instance or of one that cannot
// start. Any other call panics (the embedded interface is nil): adopt makes no other.
type adoptLXD struct {
	lxd.InstanceServer

	mu        sync.Mutex
	status    map[string]lxdapi.StatusCode
	noStart   map[string]bool // instances whose start fails, as an image without /sbin/init
	calls     []string
	onDeleted func(name string) // called when LXD deletes an instance, before it answers
}

func (f *adoptLXD) UseProject(string) lxd.InstanceServer { return f }

func (f *adoptLXD) GetInstance(name string) (*lxdapi.Instance, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	status, ok := f.status[name]
	if !ok {
		return nil, "", lxdapi.StatusErrorf(http.StatusNotFound, "Instance not found")
	}

	config := map[string]string{backend.ConfigDeployment: "dep1", backend.ConfigShape: "web"}
	return &lxdapi.Instance{Name: name, StatusCode: status, Status: status.String(), Config: config}, "", nil
}

func (f *adoptLXD) UpdateInstanceState(name string, state lxdapi.InstanceStatePut, _ string) (lxd.Operation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, state.Action+" "+name)
	status, ok := f.status[name]
	switch {
	case !ok:
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "Instance not found")
	case state.Action == "start" && status == lxdapi.Running:
		return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "The instance is already running")
	case state.Action == "start" && f.noStart[name]:
		return nil, lxdapi.StatusErrorf(http.StatusInternalServerError, "Failed to run: forkstart %s: exit status 1", name)
	case state.Action == "start":
		f.status[name] = lxdapi.Running
	case state.Action == "stop":
		f.status[name] = lxdapi.Stopped
	}

	return doneOperation{}, nil
}

func (f *adoptLXD) DeleteInstance(name string) (lxd.Operation, error) {
	f.mu.Lock()
	f.calls = append(f.calls, "delete "+name)
	_, ok := f.status[name]
	delete(f.status, name)
	f.mu.Unlock()
	if !ok {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "Instance not found")
	}

	if f.onDeleted != nil {
		f.onDeleted(name)
	}

	return doneOperation{}, nil
}

// DoHTTP answers the raw requests backend sends (its operations and their /wait long poll)
// with what the methods above answer, in LXD's envelope: the fake holds one behaviour
// whichever way backend calls it.
func (f *adoptLXD) DoHTTP(req *http.Request) (*http.Response, error) {
	parts := strings.Split(strings.TrimPrefix(req.URL.Path, "/1.0/"), "/")
	var err error
	switch {
	case parts[0] == "operations" && req.Method == "GET":
		return lxdAnswer(lxdapi.Response{Type: lxdapi.SyncResponse, StatusCode: http.StatusOK, Metadata: mustJSON(lxdapi.Operation{StatusCode: lxdapi.Success})}), nil
	case parts[0] == "operations":
		return lxdAnswer(lxdapi.Response{Type: lxdapi.SyncResponse, StatusCode: http.StatusOK}), nil
	case parts[0] == "instances" && len(parts) == 3 && parts[2] == "state" && req.Method == "PUT":
		var state lxdapi.InstanceStatePut
		err = json.NewDecoder(req.Body).Decode(&state)
		if err == nil {
			_, err = f.UpdateInstanceState(parts[1], state, "")
		}
	case parts[0] == "instances" && len(parts) == 2 && req.Method == "DELETE":
		_, err = f.DeleteInstance(parts[1])
	default:
		return nil, fmt.Errorf("adoptLXD: unexpected %s %s", req.Method, req.URL.Path)
	}

	code, ok := lxdapi.StatusErrorMatch(err)
	if err != nil && ok {
		return lxdAnswer(lxdapi.Response{Type: lxdapi.ErrorResponse, Code: code, Error: err.Error()}), nil
	}

	if err != nil {
		return nil, err
	}

	return lxdAnswer(lxdapi.Response{Type: lxdapi.AsyncResponse, StatusCode: http.StatusAccepted, Operation: "/1.0/operations/op1"}), nil
}

func lxdAnswer(resp lxdapi.Response) *http.Response {
	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(mustJSON(resp)))}
}

func mustJSON(v any) []byte {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}

	return data
}

// doneOperation is an LXD operation that has already succeeded.
type doneOperation struct{ lxd.Operation }

func (doneOperation) WaitContext(context.Context) error { return nil }

// noSockets is a fleet without governor sockets.
type noSockets struct{}

func (noSockets) AddInstance(string, string) (string, error) { return "", nil }
func (noSockets) RemoveInstance(string, string)              {}

// adoptEnv is a database with deployment dep1 and its shape web, and the reconciler of a
// daemon other than the one that reserved the records ("restarted", as after a crash).
type adoptEnv struct {
	t       *testing.T
	db      *db.Cluster
	shapeID int64
	rc      *Reconciler
}

func newAdoptEnv(t *testing.T) *adoptEnv {
	e := &adoptEnv{t: t, db: dbtest.Open(t)}
	e.tx(func(ctx context.Context, tx *sql.Tx) error {
		var deployment api.DeploymentsPost
		var shape api.DeploymentShapesPost
		err := errors.Join(json.Unmarshal([]byte(`{"name":"dep1"}`), &deployment),
			json.Unmarshal([]byte(`{"name":"web","instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":0,"scaling_maximum":3}`), &shape))
		if err != nil {
			return err
		}

		deploymentID, err := db.CreateDeployment(ctx, tx, "default", deployment)
		if err != nil {
			return err
		}

		e.shapeID, err = db.CreateShape(ctx, tx, deploymentID, shape)
		return err
	})

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	e.rc = New(Config{DB: e.db, LXD: backend.NewLXD("/nonexistent", logger), Sockets: noSockets{}, Logger: logger, Owner: "restarted"}).Reconciler
	return e
}

// tx runs f in one transaction, failing the test on error.
func (e *adoptEnv) tx(f func(ctx context.Context, tx *sql.Tx) error) {
	e.t.Helper()
	err := e.db.Transaction(context.Background(), f)
	if err != nil {
		e.t.Fatal(err)
	}
}

// instanceRows returns the records named name (none or one).
func (e *adoptEnv) instanceRows(name string) []db.Instance {
	e.t.Helper()
	var rows []db.Instance
	e.tx(func(ctx context.Context, tx *sql.Tx) error {
		var err error
		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{Name: name})
		return err
	})

	return rows
}

// reserveLaunch writes a launch's creating record of shape web, as the launch does before
// it asks LXD, and returns it as a reconcile plan reads it.
func (e *adoptEnv) reserveLaunch(name string) db.Instance {
	e.t.Helper()
	e.tx(func(ctx context.Context, tx *sql.Tx) error {
		_, err := db.CreateInstance(ctx, tx, "default", e.shapeID, name, "h", 1, "launcher", time.Now())
		return err
	})

	rows := e.instanceRows(name)
	if len(rows) != 1 {
		e.t.Fatalf("instance %s: %+v", name, rows)
	}

	return rows[0]
}

// A reconcile pass reads the records, then lists LXD. A launch that finishes in between
// moves its record to created (and leaves the in-flight set), while the listing caught its
// instance stopped between LXD's create and start: the plan says adopt a creating record
// of a stopped instance. Acting on that plan would start the instance again, be refused
// (it runs), take that for "does not start", and delete the running instance in LXD while
// its record stays created: the torture run's record created, LXD instance missing.
// Adopt must act only on a record still as the plan saw it.
func TestReconcileAdoptLeavesARecordChangedSincePlan(t *testing.T) {
	e := newAdoptEnv(t)
	planned := e.reserveLaunch("web1") // the plan's read: creating

	// The launch finishes after the plan's read: LXD started it, its record says created.
	fake := &adoptLXD{status: map[string]lxdapi.StatusCode{"web1": lxdapi.Running}}
	e.tx(func(ctx context.Context, tx *sql.Tx) error {
		return db.SetInstanceState(ctx, tx, planned.ID, db.InstanceCreating, db.InstanceCreated, "launcher", time.Now())
	})

	e.rc.Repair(context.Background(), backend.NewConn(fake), RepairStep{Row: planned, Action: RepairAdopt, Status: lxdapi.Stopped})

	if len(fake.calls) != 0 {
		t.Fatalf("adopt of a record changed since the plan must not touch LXD, it made %v", fake.calls)
	}

	if _, ok := fake.status["web1"]; !ok {
		t.Fatal("LXD lost web1, the instance of a finished launch, while its record says created")
	}

	if rows := e.instanceRows("web1"); len(rows) != 1 || rows[0].State != db.InstanceCreated {
		t.Fatalf("web1's record must stay created, got %+v", rows)
	}
}

// An adopted instance that will not start goes, as a launch LXD refused does, and it counts
// against the maximum until LXD has deleted it: its record says deleting while LXD deletes
// it (a creating record that vanished from LXD would be "never finished", and a launch
// could take its place before LXD is done), then the record goes.
func TestReconcileAdoptMarksDeletingBeforeLXDDeletes(t *testing.T) {
	e := newAdoptEnv(t)
	planned := e.reserveLaunch("web1")

	var stateWhileDeleting string
	fake := &adoptLXD{status: map[string]lxdapi.StatusCode{"web1": lxdapi.Stopped}, noStart: map[string]bool{"web1": true}}
	fake.onDeleted = func(name string) {
		rows := e.instanceRows(name)
		stateWhileDeleting = "no record"
		if len(rows) == 1 {
			stateWhileDeleting = rows[0].State
		}
	}

	e.rc.Repair(context.Background(), backend.NewConn(fake), RepairStep{Row: planned, Action: RepairAdopt, Status: lxdapi.Stopped})

	if want := []string{"start web1", "delete web1"}; len(fake.calls) != len(want) || fake.calls[0] != want[0] || fake.calls[1] != want[1] {
		t.Fatalf("adopt of an instance that does not start: LXD calls %v, want %v", fake.calls, want)
	}

	if stateWhileDeleting != db.InstanceDeleting {
		t.Fatalf("while LXD deleted web1 its record must say deleting (it still counts), it said %s", stateWhileDeleting)
	}

	if left := e.instanceRows("web1"); len(left) != 0 {
		t.Fatalf("once LXD deleted web1 its record must go, left %+v", left)
	}
}
