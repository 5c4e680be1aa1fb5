package fleet

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
)

// Placement in the fleet (doc/placement.md): the rules are shapes' (placement*.go); here
// they meet the reservation's transaction and LXD's ?target=.

// members is the LXD cluster as the last probe saw it (none outside a cluster), with the
// members being drained closed to new instances.
func (f *Fleet) members() []shapes.Member {
	if f.lxd == nil {
		return nil
	}

	members := shapes.ClusterMembers(f.lxd.Cluster())
	f.drainingMu.Lock()
	defer f.drainingMu.Unlock()
	for i := range members {
		members[i].Closed = f.draining[members[i].Name] > 0
	}

	return members
}

// discountUnreachable leaves out of a shape's Going and Replacing the instances on members
// LXD reports offline: they cannot be deleted until their member returns, and counting
// them would stop autohealing from replacing what the lost member held (doc/placement.md:
// an unreachable instance does not count against the maximum; when its member returns,
// it is deleted first thing, and LXD holds more than the maximum only until then).
func discountUnreachable(ctx context.Context, tx *sql.Tx, shape *db.Shape, members []shapes.Member) error {
	if len(members) == 0 || shape.Going == 0 {
		return nil
	}

	going, replacing, err := db.GetShapeGoingByLocation(ctx, tx, shape.ID)
	if err != nil {
		return err
	}

	for location, n := range going {
		if shapes.Unreachable(location, members) {
			shape.Going -= n
			shape.Replacing -= replacing[location]
		}
	}

	return nil
}

// placeLaunch chooses where a reserved launch goes and records it (shapes.PlaceLaunch);
// a replacement goes where shapes.ChooseReplacement says (autohealing replaces instances
// that are unhealthy, missing or unreachable: elsewhere when another domain can take it).
func (f *Fleet) placeLaunch(ctx context.Context, tx *sql.Tx, shape *db.Shape, p *pendingLaunch, c Change, members []shapes.Member) error {
	if len(members) == 0 {
		return nil
	}

	if c.FromRollout {
		// A rollout's new instances spread by themselves (its removals take from the
		// fullest member, shapes.PlanRollout): once the old ones are gone, the shape is
		// spread, whatever order the steps took.
		counts, err := db.GetShapeRevisionLocationCounts(ctx, tx, shape.ID, shape.Revision)
		if err != nil {
			return err
		}

		counts[""]-- // the row being placed
		return f.placeWith(ctx, tx, shape, p, members, counts)
	}

	if c.replaces == "" {
		choice, err := shapes.PlaceLaunch(ctx, tx, shape, p.row, members)
		p.target = choice.Target
		return err
	}

	old, err := db.GetInstance(ctx, tx, shape.ID, c.replaces)
	if err != nil {
		return err
	}

	counts, err := db.GetShapeLocationCounts(ctx, tx, shape.ID)
	if err != nil {
		return err
	}

	counts[""]-- // the row being placed
	choice, err := shapes.ChooseReplacement(shape.Name, shape.Placement, members, counts, shapes.Placed{Name: old.Name, Location: old.Location}, false)
	if err != nil {
		return err
	}

	p.target = choice.Target
	if choice.Member == "" {
		return nil
	}

	return db.SetInstanceLocation(ctx, tx, p.row, choice.Member)
}

// placeWith places a launch over the given counts and records the member.
func (f *Fleet) placeWith(ctx context.Context, tx *sql.Tx, shape *db.Shape, p *pendingLaunch, members []shapes.Member, counts map[string]int) error {
	choice, err := shapes.ChooseLaunch(shape.Name, shape.Placement, members, counts)
	if err != nil {
		return err
	}

	p.target = choice.Target
	if choice.Member == "" {
		return nil
	}

	return db.SetInstanceLocation(ctx, tx, p.row, choice.Member)
}
