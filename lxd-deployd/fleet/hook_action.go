package fleet

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// DecideWait records what ends an instance's lifecycle hook wait (continue or abandon), or
// moves its deadline (heartbeat), and has the hook keeper act on it now. Any other action
// is a 400.
func (f *Fleet) DecideWait(ctx context.Context, ref refs.InstanceRef, action string) error {
	switch action {
	case api.LifecycleActionContinue, api.LifecycleActionAbandon, api.LifecycleActionHeartbeat:
	default:
		return lxdapi.StatusErrorf(http.StatusBadRequest, "action %q is not valid: use continue, abandon or heartbeat", action)
	}

	err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := refs.ShapeInTx(ctx, tx, ref.ShapeRef)
		if err != nil {
			return err
		}

		row, err := db.GetInstance(ctx, tx, shape.ID, ref.Instance)
		if err != nil {
			return err
		}

		if row.Hook.Hook == "" || row.State != db.InstanceCreated {
			return lxdapi.StatusErrorf(http.StatusConflict, "instance %s waits in no lifecycle hook: nothing to %s", row.Name, action)
		}

		if row.Hook.Action != "" {
			return lxdapi.StatusErrorf(http.StatusConflict, "the wait of instance %s is already ending (%s)", row.Name, row.Hook.Action)
		}

		if action == api.LifecycleActionHeartbeat {
			timeout := hookTimeout(shape.Hooks, row.Hook.Hook == api.LifecycleTerminatingWait)
			if timeout == nil {
				return lxdapi.StatusErrorf(http.StatusConflict, "the shape no longer sets a timeout for %s: use continue or abandon", row.Hook.Hook)
			}

			deadline := time.Now().Add(*timeout).UTC()
			return db.SetInstanceHookAction(ctx, tx, row.ID, row.Hook.Hook, "", &deadline)
		}

		return db.SetInstanceHookAction(ctx, tx, row.ID, row.Hook.Hook, action, row.Hook.Deadline)
	})
	if err != nil {
		return err
	}

	f.Hooks.Poke()
	return nil
}
