package fleet

import (
	"context"
	"database/sql"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// fakeDrains is an in-memory door's word on drains.
type fakeDrains struct {
	mu      sync.Mutex
	drained map[string]bool
	asked   int
	pokes   int
}

func (d *fakeDrains) Drained(key string, instance string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.asked++
	return d.drained[key+"|"+instance]
}

func (d *fakeDrains) Poke() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pokes++
}

func (d *fakeDrains) set(key string, instance string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.drained[key+"|"+instance] = true
}

// The drain mark: none without traffic or for an instance still being made; now plus the
// drain timeout otherwise, persisted, and kept by a second mark (a terminate hook's drain
// continued by the delete after it).
func TestMarkDrain(t *testing.T) {
	c := dbtest.Open(t)
	now := time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)
	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		shapeID, err := db.CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 5}})
		if err != nil {
			return err
		}

		id, err := db.CreateInstance(ctx, tx, "default", shapeID, "web1", "", 1, "me", now)
		if err != nil {
			return err
		}

		shape := &db.Shape{ID: shapeID}
		row := db.Instance{ID: id, ShapeID: shapeID, Name: "web1", State: db.InstanceCreated}
		until, err := markDrain(ctx, tx, shape, row, now)
		if err != nil || until != nil {
			t.Fatalf("a shape without traffic drains: %v %v", until, err)
		}

		shape.Traffic = &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080", DrainTimeout: "20s"}
		creating := row
		creating.State = db.InstanceCreating
		until, err = markDrain(ctx, tx, shape, creating, now)
		if err != nil || until != nil {
			t.Fatalf("an instance being made drains: %v %v", until, err)
		}

		until, err = markDrain(ctx, tx, shape, row, now)
		if err != nil || until == nil || !until.Equal(now.Add(20*time.Second)) {
			t.Fatalf("drain until %v (%v), want %v", until, err, now.Add(20*time.Second))
		}

		again, err := markDrain(ctx, tx, shape, row, now.Add(10*time.Second))
		if err != nil || again == nil || !again.Equal(*until) {
			t.Fatalf("a second mark moved the deadline: %v (%v), want %v", again, err, until)
		}

		stored, err := db.GetInstanceDrain(ctx, tx, id)
		if err != nil || stored == nil || !stored.Equal(*until) {
			t.Fatalf("stored drain %v (%v)", stored, err)
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// waitDrain returns once the door says drained, at the deadline when it never does, at
// once without a mark, and with an error when the daemon stops.
func TestWaitDrain(t *testing.T) {
	stopping := make(chan struct{})
	drains := &fakeDrains{drained: map[string]bool{}}
	f := &Fleet{drains: drains, logger: slog.Default(), stopping: stopping}
	ref := refs.InstanceRef{ShapeRef: refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: "default", Name: "shop"}, Shape: "web"}, Instance: "web1"}
	p := &pendingDelete{ref: ref, row: db.Instance{Name: "web1"}}
	ctx := context.Background()

	err := f.waitDrain(ctx, p)
	if err != nil || drains.asked != 0 {
		t.Fatalf("no mark: %v, asked %d", err, drains.asked)
	}

	far := time.Now().Add(time.Hour)
	p.drainUntil = &far
	go func() {
		time.Sleep(300 * time.Millisecond)
		drains.set("default/shop/web", "web1")
	}()

	err = f.waitDrain(ctx, p)
	if err != nil || time.Now().After(far) || drains.pokes == 0 {
		t.Fatalf("drained: %v, pokes %d", err, drains.pokes)
	}

	// Never drained: the deadline ends the wait, not sooner.
	p.row.Name = "web2"
	p.ref.Instance = "web2"
	soon := time.Now().Add(400 * time.Millisecond)
	p.drainUntil = &soon
	err = f.waitDrain(ctx, p)
	if err != nil || time.Now().Before(soon) {
		t.Fatalf("timed out drain: %v, returned before its deadline: %v", err, time.Now().Before(soon))
	}

	close(stopping)
	p.drainUntil = &far
	err = f.waitDrain(ctx, p)
	if err == nil {
		t.Fatal("a stopping daemon's drain did not end")
	}
}

// A delete cut short by a restart is finished by reconcile only once its drain is over:
// no mark, a deadline passed, or the door's word.
func TestDrainOver(t *testing.T) {
	c := dbtest.Open(t)
	ctx := context.Background()
	var id int64
	err := c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "shop"}})
		if err != nil {
			return err
		}

		shapeID, err := db.CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 5}})
		if err != nil {
			return err
		}

		id, err = db.CreateInstance(ctx, tx, "default", shapeID, "web1", "", 1, "me", time.Now())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	mark := func(until *time.Time) {
		err := c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error { return db.SetInstanceDrain(ctx, tx, id, until) })
		if err != nil {
			t.Fatal(err)
		}
	}

	drains := &fakeDrains{drained: map[string]bool{}}
	f := &Fleet{db: c, drains: drains, logger: slog.Default()}
	row := db.Instance{ID: id, Project: "default", Deployment: "shop", Shape: "web", Name: "web1", State: db.InstanceDeleting}
	if !f.drainOver(ctx, row) {
		t.Fatal("an instance that never drained waits")
	}

	later := time.Now().Add(time.Hour)
	mark(&later)
	if f.drainOver(ctx, row) {
		t.Fatal("a drain with open connections and time left is over")
	}

	drains.set("default/shop/web", "web1")
	if !f.drainOver(ctx, row) {
		t.Fatal("a drain the door reports done is not over")
	}

	past := time.Now().Add(-time.Second)
	mark(&past)
	f.drains = &fakeDrains{drained: map[string]bool{}}
	if !f.drainOver(ctx, row) {
		t.Fatal("a drain past its deadline is not over")
	}
}
