package fleet

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// resizeLXD is the part of LXD the in-place pass talks to: the listing with state, and the
// instance read and update. Any other call panics (the embedded interface is nil).
type resizeLXD struct {
	lxd.InstanceServer

	mu      sync.Mutex
	config  map[string]string // of the one instance
	usage   int64
	lists   int
	updates []string
}

func (f *resizeLXD) UseProject(string) lxd.InstanceServer { return f }

func (f *resizeLXD) GetInstancesFull(lxdapi.InstanceType) ([]lxdapi.InstanceFull, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lists++
	config := map[string]string{}
	for k, v := range f.config {
		config[k] = v
	}

	inst := lxdapi.InstanceFull{Instance: lxdapi.Instance{Name: "rz-a", Type: "container", StatusCode: lxdapi.Running, Config: config}}
	inst.State = &lxdapi.InstanceState{Memory: lxdapi.InstanceStateMemory{Usage: f.usage}}
	return []lxdapi.InstanceFull{inst}, nil
}

func (f *resizeLXD) GetInstance(name string) (*lxdapi.Instance, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	config := map[string]string{}
	for k, v := range f.config {
		config[k] = v
	}

	return &lxdapi.Instance{Name: name, StatusCode: lxdapi.Running, Config: config}, "etag", nil
}

func (f *resizeLXD) UpdateInstance(name string, put lxdapi.InstancePut, etag string) (lxd.Operation, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.config = put.Config
	f.updates = append(f.updates, name+" limits.memory="+put.Config[api.LimitMemory])
	return doneOperation{}, nil
}

// heardEvents is a reporter that keeps the lifecycle events' actions.
type heardEvents struct {
	mu      sync.Mutex
	actions []string
}

func (h *heardEvents) Send(_ api.DeploymentRequestor, _ int64, e reporter.Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.actions = append(h.actions, e.Action)
}

func (h *heardEvents) Notify(context.Context, int64, string, any) {}

// TestInPlacePass: an instance whose revision differs from the latest only in
// limits.memory, holding more than the lower limit allows, is refused round after round
// and said so once (one resize-refused activity entry, one event); once its usage drops,
// the next round shrinks it in place and moves its record to the latest revision. A shape
// with an active rollout is left to it (LXD is not even asked).
func TestInPlacePass(t *testing.T) {
	e := newAdoptEnv(t)
	ctx := context.Background()
	template := func(memory string) api.DeploymentShapePut {
		put := api.DeploymentShapePut{ScalingMaximum: 3}
		put.InstanceTemplate.Source = lxdapi.InstanceSource{Type: "image", Alias: "busybox"}
		put.InstanceTemplate.Config = map[string]string{api.LimitMemory: memory}
		return put
	}

	var deploymentID int64
	e.tx(func(ctx context.Context, tx *sql.Tx) error {
		err := db.CreateRevision(ctx, tx, e.shapeID, api.DeploymentShapeRevision{Revision: 1, Shape: template("256MiB"), Cause: "create", CreatedAt: time.Now()})
		if err != nil {
			return err
		}

		id, err := db.CreateInstance(ctx, tx, "default", e.shapeID, "rz-a", "h", 1, "launcher", time.Now())
		if err != nil {
			return err
		}

		err = db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "launcher", time.Now())
		if err != nil {
			return err
		}

		err = db.UpdateShape(ctx, tx, e.shapeID, template("64MiB"))
		if err != nil {
			return err
		}

		err = db.CreateRevision(ctx, tx, e.shapeID, api.DeploymentShapeRevision{Revision: 2, Shape: template("64MiB"), Cause: "resize", CreatedAt: time.Now()})
		if err != nil {
			return err
		}

		deploymentID = e.instanceRowsTx(ctx, tx, "rz-a").DeploymentID
		return nil
	})

	fake := &resizeLXD{config: map[string]string{api.LimitMemory: "256MiB"}, usage: 100 << 20}
	heard := &heardEvents{}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	k := newInPlaceKeeper(New(Config{DB: e.db, Reporter: heard, Logger: logger}))
	k.client = func() (*backend.Conn, error) { return backend.NewConn(fake), nil }

	refusals := func() int {
		n := 0
		e.tx(func(ctx context.Context, tx *sql.Tx) error {
			entries, err := db.GetActivity(ctx, tx, db.ActivityFilter{DeploymentID: deploymentID, Shape: "web"})
			for _, a := range entries {
				if a.Action == "resize-refused" && strings.HasPrefix(a.Why, "rz-a: memory usage") && a.To == 2 {
					n++
				}
			}

			return err
		})

		return n
	}

	for round := 1; round <= 3; round++ {
		err := k.Round(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}

	if len(fake.updates) != 0 || fake.lists != 3 || refusals() != 1 || strings.Join(heard.actions, ",") != string(reporter.InstanceResizeRefused) {
		t.Fatalf("3 rounds at 100MiB used: updates %v, %d listings, %d resize-refused entries, events %v; want none, 3, 1, one refusal",
			fake.updates, fake.lists, refusals(), heard.actions)
	}

	// An active rollout owns the shape: the pass leaves it, even with the memory freed.
	fake.usage = 10 << 20
	var rollout int
	e.tx(func(ctx context.Context, tx *sql.Tx) error {
		var err error
		rollout, err = db.CreateRollout(ctx, tx, e.shapeID, api.DeploymentRollout{Status: api.RolloutRunning, Revision: 2, FromRevision: 1}, time.Now())
		return err
	})

	err := k.Round(ctx)
	if err != nil || fake.lists != 3 || len(fake.updates) != 0 {
		t.Fatalf("with rollout %d running: err %v, %d listings, updates %v; want the shape left alone", rollout, err, fake.lists, fake.updates)
	}

	e.tx(func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "DELETE FROM deployments_shapes_rollouts")
		return err
	})

	err = k.Round(ctx)
	if err != nil {
		t.Fatal(err)
	}

	rows := e.instanceRows("rz-a")
	if strings.Join(fake.updates, ",") != "rz-a limits.memory=64MiB" || rows[0].Revision != 2 || refusals() != 1 {
		t.Fatalf("after the memory was freed: updates %v, revision %d, %d refusals", fake.updates, rows[0].Revision, refusals())
	}

	// Up to date, the next round asks LXD nothing.
	err = k.Round(ctx)
	if err != nil || fake.lists != 4 {
		t.Fatalf("a round with nothing outdated: err %v, %d listings, want 4", err, fake.lists)
	}
}

// instanceRowsTx returns the one record named name, in the caller's transaction.
func (e *adoptEnv) instanceRowsTx(ctx context.Context, tx *sql.Tx, name string) db.Instance {
	e.t.Helper()
	rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{Name: name})
	if err != nil || len(rows) != 1 {
		e.t.Fatalf("instance %s: %v %+v", name, err, rows)
	}

	return rows[0]
}
