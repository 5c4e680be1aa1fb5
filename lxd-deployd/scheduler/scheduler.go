// Package scheduler fires shapes' scheduled actions (doc/governors.md, "Scheduled
// actions"): at each occurrence of an action's cron expression in its time zone, it sets
// the shape's scaling bounds, records a revision and an activity entry (who: schedule, why:
// the action), and leaves scaling to the governor: a raised minimum above the current size
// becomes a scale request, never a launch.
//
// Exactly once, in a cluster and across restarts: the scheduler runs on the holder of the
// schedule lease only, and each shape keeps in the database the time up to which its
// occurrences were looked at. A pass looks at (checked_at, now] and applies only the latest
// occurrence in it, in the transaction that moves checked_at to now and that checks the
// lease (a holder that lost it writes nothing). So a daemon that was down applies the
// last action it missed, once, when it starts; and a clock that goes back fires nothing
// twice (checked_at never moves back).
package scheduler

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/schedule"
)

// Cause is the cause of the revisions scheduled actions record; Who is the activity log's
// who of what they do.
const (
	Cause = "schedule"
	Who   = "schedule"
)

// Store runs database transactions; *db.Cluster is one.
type Store interface {
	Transaction(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error
}

// Clock tells the time; the daemon's is time.Now, or a test's (see the daemon's
// --test-clock-file).
type Clock func() time.Time

// Scheduler fires scheduled actions.
type Scheduler struct {
	store    Store
	reporter *reporter.Reporter
	clock    Clock
	logger   *slog.Logger
	fence    func(ctx context.Context, tx *sql.Tx) error
}

// New returns a scheduler; Fenced gives it the lease its writes must check.
func New(store Store, r *reporter.Reporter, clock Clock, logger *slog.Logger) *Scheduler {
	if clock == nil {
		clock = time.Now
	}

	if logger == nil {
		logger = slog.Default()
	}

	return &Scheduler{store: store, reporter: r, clock: clock, logger: logger}
}

// Fenced returns a copy whose writes check that held is still this member's lease.
func (s *Scheduler) Fenced(held lease.Lease) *Scheduler {
	copied := *s
	copied.fence = func(ctx context.Context, tx *sql.Tx) error { return lease.Check(ctx, tx, held) }
	return &copied
}

// Run makes a pass at once (a daemon that was down applies what it missed), then every
// interval until ctx ends.
func (s *Scheduler) Run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		err := s.Pass(ctx)
		if err != nil && ctx.Err() == nil {
			s.logger.Warn("scheduled actions pass failed", "err", err)
		}

		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// Fired is one action a pass applied.
type Fired struct {
	Shape  refs.ShapeRef
	Action string
	At     time.Time // the occurrence
}

// Pass looks at every shape with a schedule, at the clock's now, and applies what is due.
// It returns the first error after trying every shape.
func (s *Scheduler) Pass(ctx context.Context) error {
	_, err := s.pass(ctx)
	return err
}

func (s *Scheduler) pass(ctx context.Context) ([]Fired, error) {
	now := s.clock()
	var states []db.ScheduleState
	err := s.store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		states, err = db.GetScheduleStates(ctx, tx, 0)
		return err
	})
	if err != nil {
		return nil, err
	}

	var fired []Fired
	var first error
	for _, st := range states {
		f, err := s.shapePass(ctx, st.ShapeID, now)
		if err != nil {
			s.logger.Warn("scheduled action not applied", "shape", st.Shape, "err", err)
			if first == nil {
				first = err
			}

			continue
		}

		if f != nil {
			fired = append(fired, *f)
		}
	}

	return fired, first
}

// firing is what a shape's pass did, for what follows its commit.
type firing struct {
	ref          refs.DeploymentRef
	deploymentID int64
	before       api.DeploymentShape
	put          api.DeploymentShapePut
	action       api.DeploymentShapeScheduledAction
	at           time.Time
	revised      rollout.Revised
}

func (s *Scheduler) shapePass(ctx context.Context, shapeID int64, now time.Time) (*Fired, error) {
	by := api.InternalRequestor(Who)
	var f *firing
	err := s.store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		f = nil
		if s.fence != nil {
			err := s.fence(ctx, tx)
			if err != nil {
				return err
			}
		}

		// Read again in the transaction: the schedule may have changed since the list.
		states, err := db.GetScheduleStates(ctx, tx, shapeID)
		if err != nil || len(states) == 0 || len(states[0].Schedule) == 0 {
			return err
		}

		st := states[0]
		if st.CheckedAt == nil {
			// First sight of this schedule: occurrences count from now on.
			return db.SetScheduleChecked(ctx, tx, shapeID, now)
		}

		if !now.After(*st.CheckedAt) {
			return nil
		}

		err = db.SetScheduleChecked(ctx, tx, shapeID, now)
		if err != nil {
			return err
		}

		i, at, due := schedule.Due(st.Schedule, *st.CheckedAt, now)
		if !due {
			return nil
		}

		f, err = apply(ctx, tx, st, st.Schedule[i], at, by)
		return err
	})
	if err != nil || f == nil {
		return nil, err
	}

	s.logger.Info("scheduled action fired", "project", f.ref.Project, "deployment", f.ref.Name, "shape", f.before.Name, "action", f.action.Name, "occurrence", f.at, "minimum", f.put.ScalingMinimum, "maximum", f.put.ScalingMaximum)
	shape := refs.ShapeRef{DeploymentRef: f.ref, Shape: f.before.Name}
	s.reporter.ShapeScheduled(ctx, by, f.ref, f.deploymentID, f.before, f.put, f.action, f.at)
	s.reporter.ShapeRevised(by, shape, f.deploymentID, f.revised.Revision, f.revised.Rollout)
	return &Fired{Shape: shape, Action: f.action.Name, At: f.at}, nil
}

// apply sets the bounds an action names, in the pass's transaction, with its revision and
// activity entry.
func apply(ctx context.Context, tx *sql.Tx, st db.ScheduleState, action api.DeploymentShapeScheduledAction, at time.Time, by api.DeploymentRequestor) (*firing, error) {
	deployment, err := db.GetDeploymentRow(ctx, tx, st.DeploymentID)
	if err != nil {
		return nil, err
	}

	shape, err := rollout.ShapeByID(ctx, tx, st.DeploymentID, st.ShapeID)
	if err != nil {
		return nil, err
	}

	put := shape.Writable()
	put.ScalingMinimum, put.ScalingMaximum = *action.ScalingMinimum, *action.ScalingMaximum
	err = db.SetShapeBounds(ctx, tx, st.ShapeID, put.ScalingMinimum, put.ScalingMaximum)
	if err != nil {
		return nil, err
	}

	revised, err := rollout.RecordRevision(ctx, tx, st.DeploymentID, st.ShapeID, shape, put, rollout.RevisionArgs{Cause: Cause, By: by, Notes: action.Name})
	if err != nil {
		return nil, err
	}

	err = fleet.RecordActivity(ctx, tx, st.DeploymentID, api.DeploymentActivity{
		Shape:     shape.Name,
		Action:    "scheduled-action",
		From:      shape.ScalingCurrent,
		To:        shape.ScalingCurrent,
		Requestor: by,
		Why:       Why(action, at, shape.ScalingMinimum, shape.ScalingMaximum),
	})
	if err != nil {
		return nil, err
	}

	err = db.SetScheduleFired(ctx, tx, st.ShapeID, action.Name, at)
	if err != nil {
		return nil, err
	}

	return &firing{
		ref:          refs.DeploymentRef{Project: deployment.Project, Name: deployment.Name},
		deploymentID: st.DeploymentID,
		before:       shape.DeploymentShape,
		put:          put,
		action:       action,
		at:           at,
		revised:      revised,
	}, nil
}

// Why is the activity log's why of a fired action: its name, the occurrence in its own
// zone, and the bounds it moved.
func Why(action api.DeploymentShapeScheduledAction, at time.Time, minimum int, maximum int) string {
	loc, err := schedule.Location(action)
	if err == nil {
		at = at.In(loc)
	}

	size := ""
	if action.Size != nil {
		size = fmt.Sprintf(", size %d asked", *action.Size)
	}

	return fmt.Sprintf("%s at %s (%s): scaling bounds [%d, %d] -> [%d, %d]%s", action.Name, at.Format(time.RFC3339), action.Cron, minimum, maximum, *action.ScalingMinimum, *action.ScalingMaximum, size)
}

// View is a shape's schedule as of the clock's now, with each action's next n occurrences.
func (s *Scheduler) View(ctx context.Context, tx *sql.Tx, shapeID int64, n int) (api.DeploymentShapeSchedule, error) {
	now := s.clock()
	out := api.DeploymentShapeSchedule{Now: now.UTC(), Actions: []api.DeploymentShapeScheduleEntry{}}
	states, err := db.GetScheduleStates(ctx, tx, shapeID)
	if err != nil || len(states) == 0 {
		return out, err
	}

	st := states[0]
	out.CheckedAt, out.LastAction, out.LastAt = st.CheckedAt, st.LastAction, st.LastAt
	for _, a := range st.Schedule {
		next, err := schedule.Upcoming(a, now, n)
		if err != nil {
			return out, err
		}

		out.Actions = append(out.Actions, api.DeploymentShapeScheduleEntry{DeploymentShapeScheduledAction: a, Next: next})
	}

	return out, nil
}
