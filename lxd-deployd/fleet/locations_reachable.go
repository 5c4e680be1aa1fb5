package fleet

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// reachRequestor is who the activity log names for a member's loss and return: LXD's
// cluster said it, nobody asked.
var reachRequestor = api.InternalRequestor("lxd-cluster")

// ReachChange is one instance whose reachability changed since the last round.
type ReachChange struct {
	Row         db.Instance
	Unreachable bool
}

// PlanReachability compares each record's reachability (its member online, as LXD
// reports it) with what was reported before, and returns the changes and the new set of
// instances reported unreachable. Every poll sees an offline member again; only a change
// is reported, so a member's loss makes one event per instance, not one per poll. A record
// gone meanwhile leaves the set without a word (its delete was reported).
func PlanReachability(rows []db.Instance, members []shapes.Member, reported map[int64]bool) ([]ReachChange, map[int64]bool) {
	var changes []ReachChange
	now := map[int64]bool{}
	for _, row := range rows {
		lost := shapes.Unreachable(row.Location, members)
		if lost {
			now[row.ID] = true
		}

		if lost != reported[row.ID] {
			changes = append(changes, ReachChange{Row: row, Unreachable: lost})
		}
	}

	return changes, now
}

// reportReachability records each change in the activity log, in one transaction, and
// then sends its lifecycle event and tells the governor.
func (k *LocationKeeper) reportReachability(ctx context.Context, changes []ReachChange) error {
	if len(changes) == 0 {
		return nil
	}

	err := k.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, c := range changes {
			shape, err := db.GetShape(ctx, tx, c.Row.DeploymentID, c.Row.Shape)
			if err != nil {
				return err
			}

			action, why := reachAction(c)
			err = RecordActivity(ctx, tx, c.Row.DeploymentID, api.DeploymentActivity{Shape: c.Row.Shape, Action: action, From: shape.ScalingCurrent, To: shape.ScalingCurrent, Requestor: reachRequestor, Why: why})
			if err != nil {
				return err
			}
		}

		return nil
	})
	if err != nil {
		return err
	}

	for _, c := range changes {
		action := reporter.InstanceReachable
		if c.Unreachable {
			action = reporter.InstanceUnreachable
		}

		_, why := reachAction(c)
		k.logger.Info("instance reachability changed", "instance", c.Row.Name, "member", c.Row.Location, "unreachable", c.Unreachable)
		k.reporter.Send(reachRequestor, c.Row.DeploymentID, action.Event(refs.Instance(c.Row), map[string]any{"member": c.Row.Location}))
		k.reporter.Notify(ctx, c.Row.DeploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(action), Shape: c.Row.Shape, Instance: c.Row.Name, Reason: why})
	}

	return nil
}

// reachAction is a change's activity action and why.
func reachAction(c ReachChange) (string, string) {
	if c.Unreachable {
		return "instance-unreachable", "instance " + c.Row.Name + " is unreachable: its LXD member " + c.Row.Location + " is offline"
	}

	return "instance-reachable", "instance " + c.Row.Name + " is reachable again: its LXD member " + c.Row.Location + " is online"
}
