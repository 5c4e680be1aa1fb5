package db

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// The queries of health checks, autohealing and lifecycle hooks: the per-instance verdicts
// and waits, and the per-shape replacement record.

// InstanceReplacing: autohealing (or a rollout) is replacing the instance. It no longer
// counts, so that its replacement fits within the bounds, and it is deleted once the
// replacement is made.
const InstanceReplacing = rules.Replacing

// marshalLifecycle encodes a shape's health, hooks and warm_pool objects, each "" when absent.
func marshalLifecycle(put api.DeploymentShapePut) (string, string, string, error) {
	encode := func(v any, absent bool) (string, error) {
		if absent {
			return "", nil
		}

		b, err := json.Marshal(v)
		return string(b), err
	}

	health, err := encode(put.Health, put.Health == nil)
	if err != nil {
		return "", "", "", err
	}

	hooks, err := encode(put.Hooks, put.Hooks == nil)
	if err != nil {
		return "", "", "", err
	}

	warmPool, err := encode(put.WarmPool, put.WarmPool == nil)
	return health, hooks, warmPool, err
}

// unmarshalLifecycle decodes what marshalLifecycle stored.
func unmarshalLifecycle(health string, hooks string, warmPool string, put *api.DeploymentShapePut) error {
	if health != "" {
		put.Health = &api.DeploymentShapeHealth{}
		err := json.Unmarshal([]byte(health), put.Health)
		if err != nil {
			return fmt.Errorf("corrupt health object: %w", err)
		}
	}

	if hooks != "" {
		put.Hooks = &api.DeploymentShapeHooks{}
		err := json.Unmarshal([]byte(hooks), put.Hooks)
		if err != nil {
			return fmt.Errorf("corrupt hooks object: %w", err)
		}
	}

	if warmPool != "" {
		put.WarmPool = &api.DeploymentShapeWarmPool{}
		err := json.Unmarshal([]byte(warmPool), put.WarmPool)
		if err != nil {
			return fmt.Errorf("corrupt warm_pool object: %w", err)
		}
	}

	return nil
}

// InstanceHealth is an instance's health record.
type InstanceHealth struct {
	Status    string
	Output    string
	CheckedAt *time.Time

	// ExitCode of the last check; -1 when it could not run. Unlike Output (admins only),
	// it may go to webhooks, events and the activity log.
	ExitCode int

	// Streak counts consecutive results: positive for passes, negative for failures.
	Streak int

	// Replacement is true for an instance autohealing made that has not been healthy yet.
	Replacement bool

	// Stale says why the last check could not run (LXD did not answer, exec was refused):
	// no verdict, so Status, Streak, Output and CheckedAt are those of the last check that
	// ran. Empty when the last check ran.
	Stale string

	// CannotStart: the last failed check could not start its command (exit 126 or 127, a
	// port nothing listens on). On every instance of a shape, it is the check that is
	// broken, not the instances.
	CannotStart bool
}

// InstanceHook is the lifecycle hook an instance waits in, if any.
type InstanceHook struct {
	// Hook is api.LifecycleLaunchingWait, api.LifecycleTerminatingWait or "".
	Hook     string
	Deadline *time.Time

	// Action is what ends the wait once decided (continue or abandon), "" while waiting.
	Action string
}

// SetInstanceHealth records a check's result on an instance that is still created.
func SetInstanceHealth(ctx context.Context, tx *sql.Tx, id int64, h InstanceHealth) error {
	return SetInstancesHealth(ctx, tx, map[int64]InstanceHealth{id: h})
}

// SetInstancesHealth records checks' results, by instance id, on instances that are still
// created, in one statement (UPDATE ... FROM, SQLite 3.33, and json_extract rather than
// ->>, which Ubuntu 22.04's SQLite 3.37 lacks): a statement per result was half of what recording a tick's
// results cost (BenchmarkCheckerAtScale). ErrInstanceChanged when one is no longer created.
func SetInstancesHealth(ctx context.Context, tx *sql.Tx, records map[int64]InstanceHealth) error {
	type row struct {
		ID          int64   `json:"id"`
		Status      string  `json:"status"`
		Output      string  `json:"output"`
		CheckedAt   *string `json:"checked_at"`
		Streak      int     `json:"streak"`
		Replacement int     `json:"replacement"`
		ExitCode    int     `json:"exit_code"`
		Stale       string  `json:"stale"`
		CannotStart int     `json:"cannot_start"`
	}

	rows := make([]row, 0, len(records))
	for id, h := range records {
		r := row{ID: id, Status: h.Status, Output: h.Output, Streak: h.Streak, ExitCode: h.ExitCode, Stale: h.Stale}
		if h.Replacement {
			r.Replacement = 1
		}

		if h.CannotStart {
			r.CannotStart = 1
		}

		if h.CheckedAt != nil {
			// As the driver writes a time.Time (go-dqlite's ISO 8601 layout), so that it
			// reads the column back as a time.
			at := h.CheckedAt.Format(dqliteTimeLayout)
			r.CheckedAt = &at
		}

		rows = append(rows, r)
	}

	data, err := json.Marshal(rows)
	if err != nil {
		return err
	}

	result, err := tx.ExecContext(ctx, `
UPDATE deployments_shapes_instances AS i
   SET health = json_extract(r.value, '$.status'), health_output = json_extract(r.value, '$.output'),
       health_checked_at = json_extract(r.value, '$.checked_at'), health_streak = json_extract(r.value, '$.streak'),
       replacement = json_extract(r.value, '$.replacement'), health_exit_code = json_extract(r.value, '$.exit_code'),
       health_stale = json_extract(r.value, '$.stale'), health_cannot_start = json_extract(r.value, '$.cannot_start')
  FROM json_each(?) AS r
 WHERE i.id = json_extract(r.value, '$.id') AND i.state = ?`, string(data), InstanceCreated)
	if err != nil {
		return fmt.Errorf("record instance health: %w", err)
	}

	n, err := result.RowsAffected()
	if err != nil {
		return err
	}

	if n != int64(len(records)) {
		return ErrInstanceChanged
	}

	return nil
}

// dqliteTimeLayout is how go-dqlite writes a time.Time into a DATETIME column.
const dqliteTimeLayout = "2006-01-02 15:04:05.999999999-07:00"

// forgetInstanceHealth puts the instances of a shape that has no health checks back to
// unknown.
func forgetInstanceHealth(ctx context.Context, tx *sql.Tx, shapeID int64) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET health = 'unknown', health_output = '', health_checked_at = NULL, health_streak = 0, replacement = 0, health_exit_code = 0, health_stale = '', health_cannot_start = 0 WHERE deployment_shape_id = ?", shapeID)
	if err != nil {
		return fmt.Errorf("forget instance health: %w", err)
	}

	return nil
}

// MarkInstanceReplacement records that an instance was made by autohealing.
func MarkInstanceReplacement(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET replacement = 1 WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("mark replacement: %w", err)
	}

	return nil
}

// SetInstanceHook puts an instance into a hook wait (or out of it with hook ""), clearing
// any action decided before. Only a created instance waits.
func SetInstanceHook(ctx context.Context, tx *sql.Tx, id int64, hook string, deadline *time.Time) error {
	result, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET hook = ?, hook_deadline = ?, hook_action = '' WHERE id = ? AND state = ?", hook, deadline, id, InstanceCreated)
	if err != nil {
		return fmt.Errorf("set instance hook: %w", err)
	}

	return expectOneRow(result)
}

// SetInstanceHookAction decides how an instance's wait ends, or with action "" extends its
// deadline (a heartbeat). It is a compare-and-set on the hook the caller saw.
func SetInstanceHookAction(ctx context.Context, tx *sql.Tx, id int64, hook string, action string, deadline *time.Time) error {
	result, err := tx.ExecContext(ctx, "UPDATE deployments_shapes_instances SET hook_action = ?, hook_deadline = ? WHERE id = ? AND state = ? AND hook = ? AND hook_action = ''",
		action, deadline, id, InstanceCreated, hook)
	if err != nil {
		return fmt.Errorf("set instance hook action: %w", err)
	}

	return expectOneRow(result)
}

// SetShapeReplaceFailures records the failed replacements in a row of a shape, and marks
// it degraded (reason non-empty) or not.
func SetShapeReplaceFailures(ctx context.Context, tx *sql.Tx, id int64, failures int, degraded string) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_shapes SET replace_failures = ?, degraded = ? WHERE id = ?", failures, degraded, id)
	if err != nil {
		return fmt.Errorf("record replacement failures: %w", err)
	}

	return nil
}
