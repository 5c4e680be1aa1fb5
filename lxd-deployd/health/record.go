package health

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Record applies one result to the health record of the instance listed as listed, in tx,
// and returns the change of verdict it made, if any. Checks the daemon runs and reports an
// instance sends (ttl checks) both land here.
func Record(ctx context.Context, tx *sql.Tx, listed db.Instance, s Settings, r Result) (*Change, error) {
	u, err := prepare(ctx, tx, listed, s, r)
	if err != nil || u == nil {
		return nil, err
	}

	return u.apply(ctx, tx)
}

// update is one result's write, decided from the row as the transaction read it.
type update struct {
	row  *db.Instance
	next db.InstanceHealth
}

// prepare reads the instance's row and decides its next health record; nil when there is
// nothing to write.
func prepare(ctx context.Context, tx *sql.Tx, listed db.Instance, s Settings, r Result) (*update, error) {
	row, err := db.GetInstance(ctx, tx, listed.ShapeID, listed.Name)
	if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
		return nil, nil // deleted since it was listed: nothing to record
	}

	if err != nil {
		return nil, err
	}

	return decide(row, listed, s, r), nil
}

// prepareAll reads the rows of a batch of results in one query and decides each one's
// next health record, leaving out those with nothing to write. It only reads: a batch
// prepares every result before its first write, so that it holds the database's write
// lock for its writes only.
func prepareAll(ctx context.Context, tx *sql.Tx, results []pendingResult) ([]*update, error) {
	ids := make([]int64, len(results))
	for i, p := range results {
		ids[i] = p.target.row.ID
	}

	rows, err := db.GetInstancesByID(ctx, tx, ids)
	if err != nil {
		return nil, err
	}

	updates := make([]*update, 0, len(results))
	for _, p := range results {
		row, ok := rows[p.target.row.ID]
		if !ok {
			// Deleted since it was listed: nothing to record. An error here would fail
			// the batch, and with it the results of every other instance checked.
			continue
		}

		u := decide(row, p.target.row, p.target.settings, p.result)
		if u != nil {
			updates = append(updates, u)
			// A later result of the same instance in the batch decides from this one.
			copied := *row
			copied.Health = u.next
			rows[row.ID] = &copied
		}
	}

	return updates, nil
}

// decide is a result's next health record from the instance's row as the transaction
// read it; nil when there is nothing to write.
func decide(row *db.Instance, listed db.Instance, s Settings, r Result) *update {
	if row.ID != listed.ID || row.State != db.InstanceCreated {
		return nil // deleted or replaced meanwhile: nothing to record
	}

	// A report that arrived since the expiry was decided wins.
	if r.Expiry && row.Health.CheckedAt != nil && r.At.Sub(*row.Health.CheckedAt) < s.TTL {
		return nil
	}

	return &update{row: row, next: Next(row.Health, s, row.StateChangedAt, r)}
}

// apply writes the update and returns the change of verdict it made, if any.
func (u *update) apply(ctx context.Context, tx *sql.Tx) (*Change, error) {
	err := db.SetInstanceHealth(ctx, tx, u.row.ID, u.next)
	if err != nil {
		return nil, err
	}

	return u.effects(ctx, tx)
}

// applyAll writes a batch of updates, the records in one statement, and returns the
// changes of verdict they made.
func applyAll(ctx context.Context, tx *sql.Tx, updates []*update) ([]*Change, error) {
	records := make(map[int64]db.InstanceHealth, len(updates))
	for _, u := range updates {
		records[u.row.ID] = u.next // a later result of the same instance decided from the earlier
	}

	err := db.SetInstancesHealth(ctx, tx, records)
	if err != nil {
		return nil, err
	}

	var changes []*Change
	for _, u := range updates {
		change, err := u.effects(ctx, tx)
		if err != nil {
			return nil, fmt.Errorf("instance %s: %w", u.row.Name, err)
		}

		if change != nil {
			changes = append(changes, change)
		}
	}

	return changes, nil
}

// effects writes what a recorded update changes beyond the instance's record, and returns
// the change of verdict it made, if any.
func (u *update) effects(ctx context.Context, tx *sql.Tx) (*Change, error) {
	row, next := u.row, u.next

	// A replacement that became healthy ends a run of failed replacements.
	if row.Health.Replacement && !next.Replacement {
		err := db.SetShapeReplaceFailures(ctx, tx, row.ShapeID, 0, "")
		if err != nil {
			return nil, err
		}
	}

	if next.Status != row.Health.Status && (next.Status == api.HealthHealthy || next.Status == api.HealthUnhealthy) {
		return &Change{Instance: *row, Before: row.Health, After: next}, nil
	}

	return nil, nil
}

// Notify logs a change of verdict and tells OnChange; nil changes nothing.
func (c *Checker) Notify(ctx context.Context, change *Change) {
	if change == nil {
		return
	}

	row := change.Instance
	// The output may hold secrets the command printed: debug only.
	c.Logger.Info("instance health changed", "instance", row.Name, "project", row.Project, "health", change.After.Status, "exit_code", change.After.ExitCode)
	c.Logger.Debug("instance health check output", "instance", row.Name, "project", row.Project, "output", change.After.Output)
	if c.OnChange != nil {
		c.OnChange(ctx, *change)
	}
}
