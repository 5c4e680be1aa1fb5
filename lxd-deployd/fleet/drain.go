package fleet

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"sort"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// Drain and rebalance (doc/placement.md): both move instances one at a time the way
// autohealing replaces one (autoheal.go): the old instance leaves the count and its
// replacement is reserved in one transaction, within the shape's bounds and
// health.max_unavailable; the replacement is made first where the maximum leaves room and
// the old instance deleted first where it does not; the replacement goes to another domain
// (shapes.ChooseReplacement). The plans are shapes.PlanDrain and shapes.PlanRebalance.

// moveRetryFor bounds how long one move waits for the shape's budget (another replacement
// or a running rollout holds it).
const moveRetryFor = 2 * time.Minute

// moveOff replaces one instance elsewhere, waiting for the shape's budget when it is held.
// The move is recorded as by's (the operator who asked for the drain or rebalance), with
// cause as its why.
func (f *Fleet) moveOff(ctx context.Context, shape db.Shape, row db.Instance, cause string, by api.DeploymentRequestor) error {
	h := f.Healer
	deadline := time.Now().Add(moveRetryFor)
	for {
		h.mu.Lock()
		busy := h.active[row.ID]
		if !busy {
			h.active[row.ID] = true
		}

		h.mu.Unlock()
		var err error
		if busy {
			err = lxdapi.StatusErrorf(http.StatusConflict, "instance %s is being replaced already", row.Name)
		} else {
			err = h.replace(ctx, shape, row, cause, by)
			h.mu.Lock()
			delete(h.active, row.ID)
			h.mu.Unlock()
		}

		if err == nil || !lxdapi.StatusErrorCheck(err, http.StatusConflict) || time.Now().After(deadline) {
			return err
		}

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}

		// The row may have changed meanwhile (autohealing replaced it, say).
		fresh, err := f.instanceRow(ctx, shape.ID, row.Name)
		if err != nil {
			return err
		}

		if fresh == nil || fresh.State != db.InstanceCreated {
			return nil
		}

		row = *fresh
	}
}

// instanceRow reads one instance record, nil when it is gone.
func (f *Fleet) instanceRow(ctx context.Context, shapeID int64, name string) (*db.Instance, error) {
	var rows []db.Instance
	err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shapeID, Name: name})
		return err
	})
	if err != nil || len(rows) == 0 {
		return nil, err
	}

	return &rows[0], nil
}

// settleFor bounds how long a drain or rebalance waits for a shape's instances to be ready
// before its next move.
const settleFor = 3 * time.Minute

// waitReady waits until every counted instance of the shape is ready (shapes.Ready: made,
// out of launching:wait, healthy when the shape has checks), so that one move's
// replacement serves before the next move takes another instance away: ready instances
// then dip by one at most, within health.max_unavailable.
func (f *Fleet) waitReady(ctx context.Context, shapeID int64) error {
	deadline := time.Now().Add(settleFor)
	for {
		var shape []db.Shape
		var rows []db.Instance
		err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			shape, err = db.GetShapes(ctx, tx, db.ShapeFilter{})
			if err != nil {
				return err
			}

			rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shapeID})
			return err
		})
		if err != nil {
			return err
		}

		var health *api.DeploymentShapeHealth
		name := ""
		for _, s := range shape {
			if s.ID == shapeID {
				health, name = s.Health, s.Name
			}
		}

		waiting := ""
		members := f.members()
		for _, row := range rows {
			if shapes.Counted(row) && !shapes.Ready(health, row) && !shapes.Unreachable(row.Location, members) {
				waiting = row.Name
			}
		}

		if waiting == "" {
			return nil
		}

		if time.Now().After(deadline) {
			return fmt.Errorf("instance %s of shape %s is not ready after %v: stopped before the next move", waiting, name, settleFor)
		}

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// movable says whether an instance may be moved: made, out of any hook, not on its way out.
func movable(row db.Instance) bool {
	return row.State == db.InstanceCreated && row.Hook.Hook == ""
}

// StartDrain moves every managed instance off an LXD member before an operator evacuates
// it, shape by shape, one instance at a time, as a background operation with progress
// (moved, remaining). The member takes no new instance of this daemon while it runs.
func (f *Fleet) StartDrain(ctx context.Context, member string, by api.DeploymentRequestor) (*operations.Operation, error) {
	view, err := f.lxd.RefreshCluster()
	if err != nil {
		return nil, err
	}

	if !view.Clustered {
		return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "LXD is not clustered: there is no member to drain")
	}

	if _, ok := view.Member(member); !ok {
		names := []string{}
		for _, m := range view.Members {
			names = append(names, m.Name)
		}

		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "LXD has no cluster member %q: members are %v", member, names)
	}

	return f.ops.Start(operations.Args{
		Description: fmt.Sprintf("Draining LXD member %s", member),
		Resources:   map[string][]string{"lxd_members": {"/1.0/lxd-members/" + member}},
		Logger:      f.requestLogger(ctx),
		Run: func(ctx context.Context, op *operations.Operation) error {
			return f.drain(ctx, op, member, by)
		},
	}), nil
}

// drain runs a drain: until no movable instance of any shape is left on member.
func (f *Fleet) drain(ctx context.Context, op *operations.Operation, member string, by api.DeploymentRequestor) error {
	f.drainingMu.Lock()
	f.draining[member]++
	f.drainingMu.Unlock()
	defer func() {
		f.drainingMu.Lock()
		f.draining[member]--
		if f.draining[member] == 0 {
			delete(f.draining, member)
		}

		f.drainingMu.Unlock()
	}()

	moved := 0
	for {
		shapesByID, rows, err := f.readFleet(ctx)
		if err != nil {
			return err
		}

		var on []db.Instance
		for _, row := range rows {
			if row.Location == member && movable(row) {
				on = append(on, row)
			}
		}

		op.SetMetadata(map[string]any{"member": member, "moved": moved, "remaining": len(on)})
		if len(on) == 0 {
			f.logger.Info("drained LXD member", "member", member, "moved", moved)
			return f.waitReadyAll(ctx, rows)
		}

		// One shape at a time, in name order; each instance where the plan says.
		sort.Slice(on, func(i, j int) bool {
			return on[i].Shape < on[j].Shape || on[i].Shape == on[j].Shape && on[i].Name < on[j].Name
		})
		row := on[0]
		err = f.waitReady(ctx, row.ShapeID)
		if err != nil {
			return err
		}

		err = f.moveOff(ctx, shapesByID[row.ShapeID], row, fmt.Sprintf("drain of LXD member %s", member), by)
		if err != nil {
			return fmt.Errorf("move instance %s off %s: %w", row.Name, member, err)
		}

		moved++
	}
}

// waitReadyAll waits for every shape that has instances among rows to be ready: a drain
// ends when its last replacement serves.
func (f *Fleet) waitReadyAll(ctx context.Context, rows []db.Instance) error {
	seen := map[int64]bool{}
	for _, row := range rows {
		if seen[row.ShapeID] {
			continue
		}

		seen[row.ShapeID] = true
		err := f.waitReady(ctx, row.ShapeID)
		if err != nil {
			return err
		}
	}

	return nil
}

// readFleet reads every shape and instance record.
func (f *Fleet) readFleet(ctx context.Context) (map[int64]db.Shape, []db.Instance, error) {
	var all []db.Shape
	var rows []db.Instance
	err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		all, err = db.GetShapes(ctx, tx, db.ShapeFilter{})
		if err != nil {
			return err
		}

		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{})
		return err
	})
	byID := map[int64]db.Shape{}
	for _, s := range all {
		byID[s.ID] = s
	}

	return byID, rows, err
}

// StartRebalance restores a shape's spread (skew at most one) as a background operation
// with progress, moving one instance at a time from the fullest domain as
// shapes.PlanRebalance plans it. Its moves are recorded as by's.
func (f *Fleet) StartRebalance(ctx context.Context, ref refs.ShapeRef, deploymentID int64, by api.DeploymentRequestor) (*operations.Operation, error) {
	if len(f.members()) == 0 {
		return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "LXD is not clustered: there is no spread to restore")
	}

	return f.ops.Start(operations.Args{
		Description:  fmt.Sprintf("Rebalancing shape %s", ref.Shape),
		Project:      ref.Project,
		DeploymentID: deploymentID,
		Resources:    map[string][]string{"deployment_shapes": {api.DeploymentShapeURL(ref.Project, ref.Name, ref.Shape)}},
		Logger:       f.requestLogger(ctx),
		Run: func(ctx context.Context, op *operations.Operation) error {
			return f.rebalance(ctx, op, ref, by)
		},
	}), nil
}

// rebalance plans again after every move, until the plan is empty.
func (f *Fleet) rebalance(ctx context.Context, op *operations.Operation, ref refs.ShapeRef, by api.DeploymentRequestor) error {
	moved := 0
	for {
		var shape *db.Shape
		var rows []db.Instance
		var counts map[string]int
		err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			_, shape, err = refs.ShapeInTx(ctx, tx, ref)
			if err != nil {
				return err
			}

			rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
			if err != nil {
				return err
			}

			counts, err = db.GetShapeLocationCounts(ctx, tx, shape.ID)
			return err
		})
		if err != nil {
			return err
		}

		members := f.members()
		var candidates []shapes.Placed
		byName := map[string]db.Instance{}
		for _, row := range rows {
			if movable(row) && !shapes.Unreachable(row.Location, members) {
				candidates = append(candidates, shapes.Placed{Name: row.Name, Location: row.Location})
				byName[row.Name] = row
			}
		}

		room := rules.Room(shape.ScalingMaximum, shape.ScalingCurrent, shape.Going)
		moves, err := shapes.PlanRebalance(shape.Name, shape.Placement, members, counts, candidates, room)
		if err != nil {
			return err
		}

		op.SetMetadata(map[string]any{"moved": moved, "planned": len(moves)})
		if len(moves) == 0 {
			return f.waitReady(ctx, shape.ID)
		}

		if moved >= len(rows)*2 {
			return fmt.Errorf("shape %s is still skewed after %d moves: its members may be refusing instances", shape.Name, moved)
		}

		err = f.waitReady(ctx, shape.ID)
		if err != nil {
			return err
		}

		err = f.moveOff(ctx, *shape, byName[moves[0].Instance], "rebalance of shape "+shape.Name, by)
		if err != nil {
			return fmt.Errorf("move instance %s: %w", moves[0].Instance, err)
		}

		moved++
	}
}
