package fleet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Lifecycle hooks (AWS Auto Scaling's, with heartbeats): a deleted instance first waits in
// terminating:wait so that it can drain, and a new one waits in launching:wait before it
// counts as ready, until its governor (or the instance itself, over its socket) ends the
// wait, or the timeout passes and the shape's default action applies. The wait and its
// deadline live in the instance's record, so a restart resumes it; the hook keeper, on the
// holder of the instances lease, is the one place that ends waits.

// hookTimeout returns the wait of a shape's terminate (or launch) hook, nil when off.
func hookTimeout(hooks *api.DeploymentShapeHooks, terminate bool) *time.Duration {
	if hooks == nil {
		return nil
	}

	value := hooks.LaunchTimeout
	if terminate {
		value = hooks.TerminateTimeout
	}

	d, err := time.ParseDuration(value)
	if value == "" || err != nil || d <= 0 {
		return nil
	}

	return &d
}

// defaultAction is what ends a wait that timed out.
func defaultAction(hooks *api.DeploymentShapeHooks) string {
	if hooks == nil || hooks.DefaultAction == "" {
		return api.LifecycleActionContinue
	}

	return hooks.DefaultAction
}

// startLaunchWait puts a just created instance into launching:wait.
func startLaunchWait(ctx context.Context, tx *sql.Tx, row int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout).UTC()
	return db.SetInstanceHook(ctx, tx, row, api.LifecycleLaunchingWait, &deadline)
}

// waiting tells the governor (webhook) and /1.0/events that an instance waits in a hook.
func (f *Fleet) waiting(ctx context.Context, by api.DeploymentRequestor, ref refs.InstanceRef, deploymentID int64, hook string, deadline time.Time) {
	action := reporter.InstanceTerminating
	if hook == api.LifecycleLaunchingWait {
		action = reporter.InstanceLaunching
	}

	f.reporter.Send(by, deploymentID, action.Event(ref, nil))
	deadline = deadline.UTC()
	f.reporter.Notify(ctx, deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(action), Shape: ref.Shape, Instance: ref.Instance, Deadline: &deadline,
		Reason: fmt.Sprintf("%s until %s: POST .../instances/%s/lifecycle with continue, abandon or heartbeat", hook, deadline.Format(time.RFC3339), ref.Instance)})
}

// startDrain begins a delete of an instance of a shape with a terminate hook: the bound
// check and the wait in one transaction (the instance counts on, but no second delete may
// count it), then an operation that ends when the instance is gone or the drain abandoned.
// draining is false when the shape has no terminate hook: the caller deletes at once.
func (f *Fleet) startDrain(ctx context.Context, ref refs.InstanceRef, c Change) (*operations.Operation, bool, error) {
	var deploymentID int64
	var deadline time.Time
	var row *db.Instance
	draining := false
	err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		draining = false // a retried transaction starts over
		var shape *db.Shape
		var err error
		deploymentID, shape, err = refs.ShapeInTx(ctx, tx, ref.ShapeRef)
		if err != nil {
			return err
		}

		timeout := hookTimeout(shape.Hooks, true)
		if timeout == nil {
			return nil
		}

		row, err = db.GetInstance(ctx, tx, shape.ID, ref.Instance)
		if err != nil {
			return err
		}

		// Only a running member of the shape drains; the rest are the plain delete's business.
		if row.State != db.InstanceCreated {
			return nil
		}

		if row.Hook.Hook == api.LifecycleTerminatingWait {
			return lxdapi.StatusErrorf(http.StatusConflict, "instance %s already waits in terminating:wait: end the wait with POST .../instances/%s/lifecycle {\"action\": \"continue\"}", row.Name, row.Name)
		}

		err = shapes.CheckShrink(shape)
		if err != nil {
			return err
		}

		// Drain, then the hook: the front door takes the instance out of rotation as the
		// wait begins (traffic_drain.go), and the delete after the wait waits for what is
		// left of the drain.
		_, err = markDrain(ctx, tx, shape, *row, time.Now())
		if err != nil {
			return err
		}

		draining = true
		deadline = time.Now().Add(*timeout).UTC()
		return db.SetInstanceHook(ctx, tx, row.ID, api.LifecycleTerminatingWait, &deadline)
	})
	if err != nil || !draining {
		return nil, false, err
	}

	f.waiting(ctx, c.By, ref, deploymentID, api.LifecycleTerminatingWait, deadline)
	rowID := row.ID
	op := f.ops.Start(operations.Args{
		Description:  fmt.Sprintf("Deleting instance %s of shape %s (draining until its hook ends)", ref.Instance, ref.Shape),
		Project:      ref.Project,
		DeploymentID: deploymentID,
		Resources:    InstanceResources(ref),
		Run: func(ctx context.Context, op *operations.Operation) error {
			return f.waitDrained(ctx, ref, rowID)
		},
	})

	return op, true, nil
}

// waitDrained waits until the hook keeper has deleted the instance (success) or the drain
// was abandoned (the instance stays: an error says so).
func (f *Fleet) waitDrained(ctx context.Context, ref refs.InstanceRef, rowID int64) error {
	ticker := time.NewTicker(200 * time.Millisecond)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.stopping:
			return fmt.Errorf("lxd-deployd stopped: instance %s still waits in terminating:wait, and its deadline holds across the restart", ref.Instance)
		case <-ticker.C:
		}

		var row *db.Instance
		err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, shape, err := refs.ShapeInTx(ctx, tx, ref.ShapeRef)
			if err != nil {
				return err
			}

			row, err = db.GetInstance(ctx, tx, shape.ID, ref.Instance)
			return err
		})
		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) || (err == nil && row.ID != rowID) {
			return nil // deleted (and perhaps the name reused since)
		}

		if err != nil {
			continue
		}

		if row.State == db.InstanceCreated && row.Hook.Hook == "" {
			return fmt.Errorf("the drain of instance %s was abandoned: the instance stays", ref.Instance)
		}
	}
}

// HookKeeper ends the waits that are decided or past their deadline. It runs on the holder
// of the instances lease; every change it makes is a compare-and-set on the record it read.
type HookKeeper struct {
	db     *db.Cluster
	fleet  *Fleet
	logger *slog.Logger
	wake   loop.Loop
}

func newHookKeeper(f *Fleet) *HookKeeper {
	return &HookKeeper{db: f.db, fleet: f, logger: f.logger, wake: loop.New()}
}

// Poke makes the keeper look now rather than at its next tick (nil: no keeper).
func (k *HookKeeper) Poke() {
	if k != nil {
		k.wake.Poke()
	}
}

// Run ends the waits that are due until ctx ends (on the holder of the instances lease).
func (k *HookKeeper) Run(ctx context.Context, interval time.Duration) {
	k.wake.Run(ctx, interval, k.logger, "lifecycle hooks", k.round)
}

// round ends every wait that is due.
func (k *HookKeeper) round(ctx context.Context) error {
	var due []db.Instance
	actions := map[int64]string{}
	err := k.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		due = nil
		// Only the waiting rows: a round at rest reads none (every second, issue 20).
		rows, err := db.GetInstancesInHooks(ctx, tx)
		if err != nil {
			return err
		}

		shapesByID := map[int64]*db.Shape{}
		now := time.Now()
		for _, row := range rows {
			if row.Hook.Hook == "" {
				continue
			}

			action := row.Hook.Action
			if action == "" && row.Hook.Deadline != nil && now.After(*row.Hook.Deadline) {
				shape := shapesByID[row.ShapeID]
				if shape == nil {
					shape, err = db.GetShape(ctx, tx, row.DeploymentID, row.Shape)
					if err != nil {
						return err
					}

					shapesByID[row.ShapeID] = shape
				}

				action = defaultAction(shape.Hooks)
			}

			if action != "" {
				due = append(due, row)
				actions[row.ID] = action
			}
		}

		return nil
	})
	if err != nil || len(due) == 0 {
		return err
	}

	for _, row := range due {
		k.end(ctx, row, actions[row.ID])
	}

	return nil
}

// end ends one wait with an action.
func (k *HookKeeper) end(ctx context.Context, row db.Instance, action string) {
	ref := refs.Instance(row)
	by := api.InternalRequestor("lifecycle-hooks")
	clear := func() error {
		return k.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			err := db.SetInstanceHook(ctx, tx, row.ID, "", nil)
			if err != nil || row.Hook.Hook != api.LifecycleTerminatingWait {
				return err
			}

			// A kept instance serves again (traffic_drain.go).
			return db.SetInstanceDrain(ctx, tx, row.ID, nil)
		})
	}

	k.logger.Info("lifecycle hook ends", "instance", row.Name, "hook", row.Hook.Hook, "action", action)
	switch {
	case row.Hook.Hook == api.LifecycleTerminatingWait && action == api.LifecycleActionContinue:
		p, err := k.fleet.reserveDelete(ctx, ref, Change{By: by, Why: "drained", drained: true})
		if err != nil {
			k.logger.Warn("delete drained instance", "instance", row.Name, "err", err)
			return
		}

		err = k.fleet.finishDelete(ctx, p)
		if err != nil {
			k.logger.Warn("delete drained instance", "instance", row.Name, "err", err)
			return
		}

		k.fleet.countHookEnd(row, action)
	case row.Hook.Hook == api.LifecycleTerminatingWait:
		// Abandoning a drain keeps the instance: whoever could not drain it says it must stay.
		if clear() == nil {
			k.fleet.countHookEnd(row, action)
			k.fleet.reporter.Send(by, row.DeploymentID, reporter.InstanceKept.Event(ref, nil))
			instanceChanged(ctx, k.fleet.reporter, row.DeploymentID, reporter.InstanceKept, row.Shape, row.Name)
		}
	case action == api.LifecycleActionContinue:
		if clear() == nil {
			k.fleet.countHookEnd(row, action)
			k.fleet.reporter.Send(by, row.DeploymentID, reporter.InstanceReady.Event(ref, nil))
			instanceChanged(ctx, k.fleet.reporter, row.DeploymentID, reporter.InstanceReady, row.Shape, row.Name)
		}
	default:
		k.abandonLaunch(ctx, row, action)
	}
}

// abandonLaunch undoes a launch whose launching:wait was abandoned, as a failed one is: the
// instance goes. It turns into a decided drain first, so that a delete that fails now is
// retried next round.
func (k *HookKeeper) abandonLaunch(ctx context.Context, row db.Instance, action string) {
	ref := refs.Instance(row)
	by := api.InternalRequestor("lifecycle-hooks")
	err := k.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := db.SetInstanceHook(ctx, tx, row.ID, api.LifecycleTerminatingWait, row.Hook.Deadline)
		if err != nil {
			return err
		}

		return db.SetInstanceHookAction(ctx, tx, row.ID, api.LifecycleTerminatingWait, api.LifecycleActionContinue, row.Hook.Deadline)
	})
	if err != nil {
		return
	}

	// The wait ended here; a delete that fails is retried as a decided drain.
	k.fleet.countHookEnd(row, action)
	p, err := k.fleet.reserveDelete(ctx, ref, Change{By: by, Why: "launch abandoned", drained: true})
	if err == nil {
		err = k.fleet.finishDelete(ctx, p)
	}

	if err != nil && !errors.Is(err, db.ErrInstanceChanged) {
		k.logger.Warn("delete abandoned launch", "instance", row.Name, "err", err)
	}
}
