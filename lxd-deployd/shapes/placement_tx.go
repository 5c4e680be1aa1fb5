package shapes

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// PlaceLaunch chooses the member of a reserved launch and records it on the instance row,
// in the reservation's transaction (after CheckGrow and db.CreateInstance): the counts it
// reads include every reservation committed before it, and the dqlite transaction
// serialises concurrent launches, so two cannot both take the emptiest member. members is
// the LXD cluster (none when LXD is not clustered: then nothing is chosen or recorded).
// The caller creates the instance with ?target=Choice.Target and, once made, records the
// member LXD actually put it on (spread none leaves the choice to LXD).
func PlaceLaunch(ctx context.Context, tx *sql.Tx, shape *db.Shape, row int64, members []Member) (Choice, error) {
	if len(members) == 0 {
		return Choice{}, nil
	}

	counts, err := db.GetShapeLocationCounts(ctx, tx, shape.ID)
	if err != nil {
		return Choice{}, err
	}

	// The row being placed is counted already, under no member yet.
	counts[""]--
	choice, err := ChooseLaunch(shape.Name, shape.Placement, members, counts)
	if err != nil || choice.Member == "" {
		return choice, err
	}

	return choice, db.SetInstanceLocation(ctx, tx, row, choice.Member)
}
