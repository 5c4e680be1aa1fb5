package fleet

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// The traffic drain (doc/traffic.md): an instance of a shape with traffic that is about to
// go is marked draining in its delete's reservation (drain_until, persisted), the front
// door takes it out of rotation, and the LXD delete waits until the door reports no open
// connection to it or drain_until passes. finishDelete is the one place every delete but
// a forced one goes through (governor deletes, scale-in, rollouts, autohealing, member
// drains and rebalances, warm pool returns), so the drain is there and nowhere else. A
// restarted daemon's reconcile finishes a delete cut short only once its drain is over.

// Drains is what the fleet needs of the front door (package doorkeeper implements it).
type Drains interface {
	// Drained says whether the door has taken the instance out of rotation and measured
	// no open connection to it since; false while it does not know.
	Drained(key string, instance string) bool

	// Poke has the door apply the new picture now rather than at its next round.
	Poke()
}

// drainPoll is how often a drain asks the door.
const drainPoll = 100 * time.Millisecond

// markDrain records, in a delete's (or a terminate hook's) transaction, until when the
// instance drains: now plus the shape's drain timeout, or the deadline an earlier mark set
// (a terminate hook's wait drained it already). nil when the shape has no traffic or the
// instance never served (still being made).
func markDrain(ctx context.Context, tx *sql.Tx, shape *db.Shape, row db.Instance, now time.Time) (*time.Time, error) {
	if shape.Traffic == nil || row.State == db.InstanceCreating || row.State == db.InstanceMissing {
		return nil, nil
	}

	until, err := db.GetInstanceDrain(ctx, tx, row.ID)
	if err != nil || until != nil {
		return until, err
	}

	timeout, err := validate.TrafficDrainTimeout(shape.Traffic)
	if err != nil {
		return nil, err
	}

	at := now.Add(timeout).UTC()
	return &at, db.SetInstanceDrain(ctx, tx, row.ID, &at)
}

// waitDrain waits until the door reports the instance drained or its drain deadline
// passes. Without a door (Config.Drains nil) it waits for the deadline: a load balancer
// that follows the endpoints API needs that time to stop sending to it. When the daemon
// stops, it returns an error and the record stays deleting: a restarted daemon's
// reconcile finishes the delete once the drain is over (drainOver).
func (f *Fleet) waitDrain(ctx context.Context, p *pendingDelete) error {
	if p.drainUntil == nil {
		return nil
	}

	key := frontdoor.Key(p.ref.Project, p.ref.Name, p.ref.Shape)
	if f.drains != nil {
		f.drains.Poke()
	}

	start := time.Now()
	ticker := time.NewTicker(drainPoll)
	defer ticker.Stop()
	for {
		if f.drains != nil && f.drains.Drained(key, p.row.Name) {
			f.logger.Info("instance drained", "instance", p.row.Name, "after", time.Since(start).Round(time.Millisecond))
			return nil
		}

		if !time.Now().Before(*p.drainUntil) {
			f.logger.Info("instance drain timed out", "instance", p.row.Name, "after", time.Since(start).Round(time.Millisecond))
			return nil
		}

		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.stopping:
			return fmt.Errorf("lxd-deployd stopped while instance %s drained: a restarted daemon deletes it once its drain is over", p.row.Name)
		case <-ticker.C:
		}
	}
}

// drainOver says whether a delete cut short may be finished: its instance does not
// drain, or its drain is over (the door reports it drained, or its deadline passed).
func (f *Fleet) drainOver(ctx context.Context, row db.Instance) bool {
	var until *time.Time
	err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		until, err = db.GetInstanceDrain(ctx, tx, row.ID)
		return err
	})
	if err != nil {
		return false
	}

	if until == nil || !time.Now().Before(*until) {
		return true
	}

	if f.drains != nil {
		f.drains.Poke()
		return f.drains.Drained(frontdoor.Key(row.Project, row.Deployment, row.Shape), row.Name)
	}

	return false
}
