package fleet

import (
	"context"
	"database/sql"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// holdChange is a shape whose autohealing hold began, changed its reason or ended.
type holdChange struct {
	shape  db.Shape
	reason string
}

// recordHolds writes each shape's hold as this round decided it, where it changed: the
// shape's health_status, and for a hold that begins or ends an activity entry, an event
// on /1.0/events and a lifecycle webhook to the governor. A hold's reason that only moves
// (3 of 4 unhealthy, then 4 of 4) is rewritten without another announcement.
func (h *Autohealer) recordHolds(ctx context.Context, shapes []db.Shape, holds HealHolds, steps []HealStep) {
	var changes []holdChange
	for _, s := range shapes {
		reason := ""
		settings, ok := healSettings(s)
		if ok && settings.Replace {
			reason = holds.ShapeReason(s.ID, steps)
		}

		if reason != s.HealHold {
			changes = append(changes, holdChange{shape: s, reason: reason})
		}
	}

	if len(changes) == 0 {
		return
	}

	now := time.Now()
	var announced []holdChange
	var refsByShape = map[int64]refs.ShapeRef{}
	err := h.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		announced = announced[:0]
		for _, c := range changes {
			since := c.shape.HealHoldSince
			if since == nil || c.shape.HealHold == "" {
				since = &now
			}

			err := db.SetShapeHealHold(ctx, tx, c.shape.ID, c.reason, since)
			if err != nil {
				return err
			}

			if (c.reason == "") == (c.shape.HealHold == "") {
				continue // the reason moved; the hold neither began nor ended
			}

			d, err := db.GetDeploymentRow(ctx, tx, c.shape.DeploymentID)
			if err != nil {
				return err
			}

			refsByShape[c.shape.ID] = refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: d.Project, Name: d.Name}, Shape: c.shape.Name}
			action, why := "autohealing-held", c.reason
			if c.reason == "" {
				action, why = "autohealing-resumed", "resumed: the cause of the hold went ("+c.shape.HealHold+")"
			}

			err = RecordActivity(ctx, tx, c.shape.DeploymentID, api.DeploymentActivity{Shape: c.shape.Name, Action: action, Requestor: api.InternalRequestor("autoheal"), Why: why, From: c.shape.ScalingCurrent, To: c.shape.ScalingCurrent})
			if err != nil {
				return err
			}

			announced = append(announced, c)
		}

		return nil
	})
	if err != nil {
		h.logger.Warn("autohealing: record holds", "err", err)
		return
	}

	for _, c := range announced {
		action, reason := reporter.ShapeAutohealingHeld, c.reason
		if c.reason == "" {
			h.settleAfterHold(c.shape, now)
			action, reason = reporter.ShapeAutohealingResumed, "the cause of the hold went: "+c.shape.HealHold
			h.logger.Info("autohealing: resumed", "shape", c.shape.Name)
		} else {
			h.logger.Warn("autohealing: held", "shape", c.shape.Name, "reason", c.reason)
		}

		by := api.InternalRequestor("autoheal")
		h.fleet.reporter.Send(by, c.shape.DeploymentID, action.Event(refsByShape[c.shape.ID], map[string]any{"reason": reason}))
		h.fleet.reporter.Notify(ctx, c.shape.DeploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(action), Shape: c.shape.Name, Reason: reason})
	}
}

// settleAfterHold gives the instances of a shape whose hold just lifted the time of one
// verdict to show they recovered: a shared fault ends instance by instance, and the hold
// lifts as soon as no more than hold_share are unhealthy, when the last of them may be a
// check or two from healthy (TestAutohealingHolds saw one replaced 20 ms before its
// healthy verdict). An instance still unhealthy after it is replaced.
func (h *Autohealer) settleAfterHold(shape db.Shape, now time.Time) {
	settings, ok := healSettings(shape)
	if !ok {
		return
	}

	h.mu.Lock()
	defer h.mu.Unlock()
	h.settle[shape.ID] = now.Add(settleTime(settings))
}

// settleTime is one verdict's time: unhealthy_threshold checks, and one more, each at most
// an interval and a timeout apart (5 s at least).
func settleTime(s health.Settings) time.Duration {
	return max(5*time.Second, time.Duration(s.UnhealthyThreshold+1)*(s.Interval+s.Timeout))
}

// settling says whether a verdict's step waits for its shape to settle after a hold, and
// until when. The caller holds h.mu.
func (h *Autohealer) settling(step HealStep, now time.Time) (time.Time, bool) {
	until, ok := h.settle[step.Shape.ID]
	if !ok {
		return time.Time{}, false
	}

	if !now.Before(until) {
		delete(h.settle, step.Shape.ID)
		return time.Time{}, false
	}

	verdict := !step.Finish && !step.Unreachable && step.Row.State == db.InstanceCreated
	return until, verdict
}

// correlationWindow is how long an instance is seen unhealthy before it is replaced for
// that verdict: a fault shared by several instances turns them unhealthy a check or a few
// apart, and the first must not be replaced before the others show the same (a hold
// weighs them all). One interval and one timeout, at least 2 s.
func correlationWindow(s health.Settings) time.Duration {
	return max(2*time.Second, s.Interval+s.Timeout)
}

// noteUnhealthy records when the rounds first saw each unhealthy instance among rows, and
// forgets the others. The caller holds h.mu.
func (h *Autohealer) noteUnhealthy(rows []db.Instance, now time.Time) {
	seen := map[int64]bool{}
	for _, row := range rows {
		if row.State != db.InstanceCreated || row.Health.Status != api.HealthUnhealthy {
			continue
		}

		seen[row.ID] = true
		if _, ok := h.unhealthySince[row.ID]; !ok {
			h.unhealthySince[row.ID] = now
		}
	}

	for id := range h.unhealthySince {
		if !seen[id] {
			delete(h.unhealthySince, id)
		}
	}
}

// correlating says whether a verdict's step waits out its correlation window, and for how
// much longer. The caller holds h.mu.
func (h *Autohealer) correlating(step HealStep, now time.Time) (time.Duration, bool) {
	if step.Finish || step.Unreachable || step.Row.State != db.InstanceCreated {
		return 0, false
	}

	settings, ok := healSettings(step.Shape)
	since, seen := h.unhealthySince[step.Row.ID]
	if !ok || !seen {
		return 0, false
	}

	left := correlationWindow(settings) - now.Sub(since)
	return left, left > 0
}
