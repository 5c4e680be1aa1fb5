package fleet

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
)

// LocationKeeper keeps each instance record's location (the LXD cluster member) as LXD
// has it. A launch records the member it chose, but LXD decides where spread none puts an
// instance, an operator's `lxc cluster evacuate` or `lxc move` moves instances, and
// instances made before placement have none: every count per member (placement, metrics,
// drain) reads the records, so they follow LXD (doc/placement.md). It only ever writes the
// location column, compare-and-set, and runs on the holder of the instances lease.
//
// It also tells when an instance turns unreachable (LXD reports its member offline) or
// reachable again: once per change, in the activity log and as a lifecycle event
// (locations_reachable.go).
type LocationKeeper struct {
	db       *db.Cluster
	lxd      *backend.LXD
	reporter Reporter
	logger   *slog.Logger

	// reported holds the instances reported unreachable, by record id. Only Run's
	// goroutine touches it.
	reported map[int64]bool
}

// Run compares every interval until ctx ends. A new holder of the lease starts from
// nothing reported: it reports once the instances that are unreachable when it starts
// (the last holder may not have), and nothing about the reachable ones.
func (k *LocationKeeper) Run(ctx context.Context, interval time.Duration) {
	k.reported = map[int64]bool{}
	for {
		err := k.round(ctx)
		if err != nil && ctx.Err() == nil {
			k.logger.Debug("instance locations not refreshed", "err", err)
		}

		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// round reads the records, lists each project's instances in LXD once, and records the
// members that differ. An instance LXD does not list (being made, gone) is left alone:
// reconcile's business.
func (k *LocationKeeper) round(ctx context.Context) error {
	if k.lxd == nil || !k.lxd.Cluster().Clustered {
		return nil
	}

	client, err := k.lxd.Conn()
	if err != nil {
		return err
	}

	var rows []db.Instance
	err = k.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{})
		return err
	})
	if err != nil {
		return err
	}

	// Before LXD's listing, which an offline member can slow or fail.
	changes, now := PlanReachability(rows, shapes.ClusterMembers(k.lxd.Cluster()), k.reported)
	err = k.reportReachability(ctx, changes)
	if err != nil {
		return err
	}

	k.reported = now
	byProject := map[string][]db.Instance{}
	for _, row := range rows {
		byProject[row.Project] = append(byProject[row.Project], row)
	}

	type move struct {
		id       int64
		from, to string
	}

	var moves []move
	for project, rows := range byProject {
		live, err := backend.ListInstanceStatuses(client, project)
		if err != nil {
			return err
		}

		for _, row := range rows {
			inst, ok := live[row.Name]
			if ok && inst.Location != "" && inst.Location != row.Location {
				moves = append(moves, move{row.ID, row.Location, inst.Location})
			}
		}
	}

	if len(moves) == 0 {
		return nil
	}

	return k.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, m := range moves {
			err := db.MoveInstanceLocation(ctx, tx, m.id, m.from, m.to)
			if err != nil && !errors.Is(err, db.ErrInstanceChanged) {
				return err
			}
		}

		return nil
	})
}
