package main

import (
	"context"
	"database/sql"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// tx runs f in one transaction of the test API's database, failing the test on error.
func (a *testAPI) tx(f func(ctx context.Context, tx *sql.Tx) error) {
	a.t.Helper()
	err := a.db.Transaction(context.Background(), f)
	if err != nil {
		a.t.Fatal(err)
	}
}

// activity returns dep1's activity log.
func (a *testAPI) activity() []api.DeploymentActivity {
	a.t.Helper()
	var entries []api.DeploymentActivity
	a.tx(func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, "default", "dep1")
		if err != nil {
			return err
		}

		entries, err = db.GetActivity(ctx, tx, db.ActivityFilter{DeploymentID: id})
		return err
	})

	return entries
}

// A crash between a launch's reservation and its create in LXD leaves a creating record.
// Reconcile removes it and, like a launch LXD refused, undoes what the reservation
// recorded: an activity entry, and the +1 a governor's launch gave a running rollout's size
// (a rollout's own launch gave none, so its size stays).
func TestReconcileUndoesStaleLaunchReservation(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", `{"name":"web","instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":0,"scaling_maximum":5}`, 201, "")
	a.addCreatedInstance("web1")
	a.addCreatedInstance("web2")

	var deploymentID int64
	var shape *db.Shape
	a.tx(func(ctx context.Context, tx *sql.Tx) error {
		var err error
		deploymentID, err = db.GetDeploymentID(ctx, tx, "default", "dep1")
		if err != nil {
			return err
		}

		shape, err = db.GetShape(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		_, err = db.CreateRollout(ctx, tx, shape.ID, api.DeploymentRollout{Status: api.RolloutRunning, Phase: "replacing", Revision: 1, FromRevision: 1, Cause: "api", Size: shape.ScalingCurrent}, time.Now())
		return err
	})

	// The reservations, as the fleet's reserveLaunch writes them, of a governor's launch and of
	// the rollout's own; then the daemon "crashes": nothing makes them in LXD.
	reserve := func(name string, c fleet.Change) {
		a.tx(func(ctx context.Context, tx *sql.Tx) error {
			s, err := db.GetShape(ctx, tx, deploymentID, "web")
			if err != nil {
				return err
			}

			row, err := db.CreateInstance(ctx, tx, "default", s.ID, name, "h", s.Revision, "crashed", time.Now())
			if err != nil {
				return err
			}

			err = fleet.ScaleActivity(ctx, tx, deploymentID, s, name, +1, c)
			if err != nil || !c.FromRollout {
				return err
			}

			return db.SetInstanceKeepsRolloutSize(ctx, tx, row)
		})
	}

	rolloutSize := func() int {
		var r *db.Rollout
		a.tx(func(ctx context.Context, tx *sql.Tx) error {
			var err error
			r, err = db.GetActiveRollout(ctx, tx, shape.ID)
			return err
		})

		return r.Size
	}

	reserve("web3", fleet.Change{By: api.DeploymentRequestor{Protocol: auth.ProtocolGovernor, Name: "gov"}})
	reserve("web-r1-abcdef", fleet.Change{By: rollout.Requestor, FromRollout: true})
	if got := rolloutSize(); got != 3 {
		t.Fatalf("the governor's reservation must move the rollout's size to 3, got %d", got)
	}

	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	sockets, err := governor.NewListener(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	rc := fleet.New(fleet.Config{DB: a.db, LXD: backend.NewLXD("/nonexistent", logger), Sockets: sockets, Reporter: lifecycle{}, Logger: logger, Owner: "restarted"}).Reconciler
	before := len(a.activity())
	for _, name := range []string{"web3", "web-r1-abcdef"} {
		row := a.instanceRow(name)
		if row.State != db.InstanceCreating {
			t.Fatalf("%s: state %s, want creating", name, row.State)
		}

		rc.Repair(context.Background(), nil, fleet.RepairStep{Row: row, Action: fleet.PlanRepair(row, false)})
	}

	var left []db.Instance
	a.tx(func(ctx context.Context, tx *sql.Tx) error {
		left, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
		return err
	})
	if len(left) != 2 {
		t.Fatalf("reconcile must remove both stale records, left %v", left)
	}

	if got := rolloutSize(); got != 2 {
		t.Fatalf("the rollout must be back at its size 2 (one extra new instance otherwise), got %d", got)
	}

	entries := a.activity()[before:]
	if len(entries) != 2 {
		t.Fatalf("want one activity entry per removed record, got %+v", entries)
	}

	for i, want := range []struct{ from, to int }{{4, 3}, {3, 2}} {
		e := entries[i]
		if e.Action != "scale-down" || e.From != want.from || e.To != want.to || e.Who != "reconcile" || e.Shape != "web" {
			t.Fatalf("entry %d: %+v, want scale-down %d -> %d by reconcile", i, e, want.from, want.to)
		}
	}

	// A second pass finds nothing to undo twice.
	gone := db.Instance{ID: 999, DeploymentID: deploymentID, Shape: "web", Name: "web3", State: db.InstanceCreating, SizesRollout: true}
	rc.Repair(context.Background(), nil, fleet.RepairStep{Row: gone, Action: fleet.PlanRepair(gone, false)})
	if got := rolloutSize(); got != 2 || len(a.activity()) != before+2 {
		t.Fatalf("removing a record already gone must change nothing: size %d, %d entries", got, len(a.activity())-before)
	}
}

// A forced delete of a shape or deployment removes each instance's record, after LXD
// deleted it, with a scale-down entry by whoever forced it, and moves a running rollout's
// size down with it; an instance that no longer counted (missing) changes no size.
func TestForcedDeleteRecordsActivity(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", `{"name":"web","instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_minimum":1,"scaling_maximum":5}`, 201, "")
	a.addCreatedInstance("web1")
	a.addCreatedInstance("web2")
	gone := a.addCreatedInstance("web3")

	var shapeID int64
	a.tx(func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.GetDeploymentID(ctx, tx, "default", "dep1")
		if err != nil {
			return err
		}

		shapeID, err = db.GetShapeID(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		err = db.SetInstanceState(ctx, tx, gone, db.InstanceCreated, db.InstanceMissing, "test", time.Now())
		if err != nil {
			return err
		}

		_, err = db.CreateRollout(ctx, tx, shapeID, api.DeploymentRollout{Status: api.RolloutRunning, Phase: "replacing", Revision: 1, FromRevision: 1, Cause: "api", Size: 2}, time.Now())
		return err
	})

	before := len(a.activity())
	by := api.DeploymentRequestor{Protocol: auth.ProtocolUnix, Name: "alice"}
	for _, name := range []string{"web1", "web2", "web3"} {
		err := fleet.DropForcedInstance(context.Background(), a.db, a.instanceRow(name), by, `shape "web" deleted with force`)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}

	entries := a.activity()[before:]
	if len(entries) != 2 {
		t.Fatalf("want a scale-down per counted instance (not the missing one), got %+v", entries)
	}

	for i, want := range []struct {
		name     string
		from, to int
	}{{"web1", 2, 1}, {"web2", 1, 0}} {
		e := entries[i]
		if e.Action != "scale-down" || e.From != want.from || e.To != want.to || e.Who != "admin" || e.Requestor.Name != "alice" || e.Why != "delete "+want.name+` (shape "web" deleted with force)` {
			t.Fatalf("entry %d: %+v, want scale-down %d -> %d by alice", i, e, want.from, want.to)
		}
	}

	a.tx(func(ctx context.Context, tx *sql.Tx) error {
		r, err := db.GetActiveRollout(ctx, tx, shapeID)
		if err != nil || r.Size != 0 {
			t.Fatalf("the running rollout must follow the forced delete down to 0: %+v %v", r, err)
		}

		return nil
	})
}
