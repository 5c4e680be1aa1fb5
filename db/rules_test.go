package db_test

import (
	"context"
	"database/sql"
	"slices"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// TestRulesSQLAgreeWithGo holds every SQL fragment of shared/rules, and every query that
// counts or picks instances by them (scaling_current and the bound counts, the metrics'
// counts and ready, the placement counts, the care loops' reads), to the Go predicate of
// the same rule, over every instance state (and one no code writes), hook wait, health
// verdict and revision, in a real dqlite. Each case is the one instance of its own shape,
// so a shape's count is that instance's answer. (The governor's metrics event is held to
// the same cases in lxd-deployd/webhooks, TestMetricsEventCountsEveryState.)
func TestRulesSQLAgreeWithGo(t *testing.T) {
	c := dbtest.Open(t)
	cases := dbtest.WriteInstanceCases(t, c, dbtest.InstanceCases())
	ctx := context.Background()
	byName := map[string]dbtest.InstanceCase{}
	byShape := map[int64]dbtest.InstanceCase{}
	var shapeIDs []int64
	for _, k := range cases {
		byName[k.Name] = k
		byShape[k.ShapeID] = k
		shapeIDs = append(shapeIDs, k.ShapeID)
	}

	one := func(b bool) int {
		if b {
			return 1
		}

		return 0
	}

	check := func(k dbtest.InstanceCase, what string, sqlSays int, goSays bool) {
		t.Helper()
		if sqlSays != one(goSays) {
			t.Errorf("%s: %s is %d in SQL, %v in Go", k, what, sqlSays, goSays)
		}
	}

	// The fragments themselves, each evaluated on every row.
	i := rules.SQL("i")
	fragments := []struct {
		name string
		sql  string
		rule func(k dbtest.InstanceCase) bool
	}{
		{"Counted", i.Counted(), func(k dbtest.InstanceCase) bool { return rules.Counted(k.State) }},
		{"Going", i.Going(), func(k dbtest.InstanceCase) bool { return rules.Going(k.State) }},
		{"Held", "(" + i.Counted() + " OR " + i.Going() + ")", func(k dbtest.InstanceCase) bool { return rules.Held(k.State) }},
		{"Outdated", i.Outdated("si"), func(k dbtest.InstanceCase) bool { return rules.Outdated(k.Latest-one(k.Outdated), k.Latest) }},
		{"Stale", i.Stale("si"), func(k dbtest.InstanceCase) bool { return rules.Stale(k.State, k.Latest-one(k.Outdated), k.Latest) }},
		{"Settled", i.Settled(), func(k dbtest.InstanceCase) bool { return rules.Settled(k.State, k.Hook) }},
		{"Terminating", i.Terminating(), func(k dbtest.InstanceCase) bool { return rules.Terminating(k.State, k.Hook) }},
		{"Ready unchecked", i.Ready(false), func(k dbtest.InstanceCase) bool { return rules.Ready(k.State, k.Hook, k.Health, false) }},
		{"Ready checked", i.Ready(true), func(k dbtest.InstanceCase) bool { return rules.Ready(k.State, k.Hook, k.Health, true) }},
	}

	for _, state := range append(append([]string{}, rules.States...), dbtest.LegacyState) {
		fragments = append(fragments, struct {
			name string
			sql  string
			rule func(k dbtest.InstanceCase) bool
		}{"In " + state, i.In(state), func(k dbtest.InstanceCase) bool { return k.State == state }})
	}

	fragments = append(fragments, struct {
		name string
		sql  string
		rule func(k dbtest.InstanceCase) bool
	}{"In going states", i.In(rules.Deleting, rules.Replacing), func(k dbtest.InstanceCase) bool { return rules.Going(k.State) }})

	var shapeRows []db.Shape
	var counts []db.ShapeCount
	var members []db.MemberCount
	var inHooks, healCandidates []db.Instance
	var outdatedShapes []int64
	var healthByLocation map[int64]map[string]db.LocationHealth
	locationCounts := map[int64]map[string]int{}
	goingByLocation := map[int64][2]map[string]int{}
	err := c.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		for _, f := range fragments {
			rows, err := tx.QueryContext(ctx, "SELECT i.name, ("+f.sql+") FROM deployments_shapes_instances i JOIN deployments_shapes si ON si.id = i.deployment_shape_id")
			if err != nil {
				return err
			}

			seen := 0
			for rows.Next() {
				var name string
				var says int
				err = rows.Scan(&name, &says)
				if err != nil {
					_ = rows.Close()
					return err
				}

				seen++
				k := byName[name]
				check(k, "fragment "+f.name, says, f.rule(k))
			}

			_ = rows.Close()
			if seen != len(cases) {
				t.Errorf("fragment %s: %d rows for %d cases", f.name, seen, len(cases))
			}
		}

		var err error
		shapeRows, err = db.GetShapes(ctx, tx, db.ShapeFilter{})
		if err != nil {
			return err
		}

		counts, err = db.GetShapeCounts(ctx, tx)
		if err != nil {
			return err
		}

		members, err = db.GetMemberCounts(ctx, tx)
		if err != nil {
			return err
		}

		for _, id := range shapeIDs {
			locationCounts[id], err = db.GetShapeLocationCounts(ctx, tx, id)
			if err != nil {
				return err
			}

			going, replacing, err := db.GetShapeGoingByLocation(ctx, tx, id)
			if err != nil {
				return err
			}

			goingByLocation[id] = [2]map[string]int{going, replacing}
		}

		inHooks, err = db.GetInstancesInHooks(ctx, tx)
		if err != nil {
			return err
		}

		healCandidates, err = db.GetHealCandidates(ctx, tx, shapeIDs, nil)
		if err != nil {
			return err
		}

		outdatedShapes, err = db.GetOutdatedShapeIDs(ctx, tx)
		if err != nil {
			return err
		}

		healthByLocation, err = db.GetHealthByLocation(ctx, tx, shapeIDs)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	if len(shapeRows) != len(cases) || len(counts) != len(cases) {
		t.Fatalf("%d shapes and %d shape counts for %d cases", len(shapeRows), len(counts), len(cases))
	}

	// scaling_current and the counts the bound checks use.
	for _, s := range shapeRows {
		k := byShape[s.ID]
		check(k, "scaling_current (GetShapes)", s.ScalingCurrent, rules.Counted(k.State))
		check(k, "going (GetShapes)", s.Going, rules.Going(k.State))
		check(k, "terminating (GetShapes)", s.Terminating, rules.Terminating(k.State, k.Hook))
		check(k, "replacing (GetShapes)", s.Replacing, k.State == rules.Replacing)
		room := rules.Room(s.ScalingMaximum, one(rules.Counted(k.State)), one(rules.Going(k.State)))
		if got := rules.Room(s.ScalingMaximum, s.ScalingCurrent, s.Going); got != room {
			t.Errorf("%s: room %d from SQL, %d from Go", k, got, room)
		}
	}

	// The metrics' counts, and ready as the metrics report it with and without checks.
	for _, s := range counts {
		k := byName["i"+s.Shape[1:]]
		counted := rules.Counted(k.State)
		check(k, "current (GetShapeCounts)", s.Current, counted)
		check(k, "outdated (GetShapeCounts)", s.Outdated, counted && k.Outdated)
		check(k, "settled (GetShapeCounts)", s.Settled, counted && rules.Settled(k.State, k.Hook))
		for _, checked := range []bool{false, true} {
			check(k, "ready (GetShapeCounts, rules.ReadyCount)", rules.ReadyCount(checked, s.Settled, s.SettledHealthy), counted && rules.Ready(k.State, k.Hook, k.Health, checked))
		}
	}

	// Placement: counted per member, going (and replacing) per member.
	memberCount := map[string]int{}
	for _, m := range members {
		memberCount[m.Shape] += m.Count
	}

	for id, k := range byShape {
		check(k, "counted on m1 (GetShapeLocationCounts)", locationCounts[id]["m1"], rules.Counted(k.State))
		check(k, "counted on m1 (GetMemberCounts)", memberCount[k.Shape], rules.Counted(k.State))
		check(k, "going on m1 (GetShapeGoingByLocation)", goingByLocation[id][0]["m1"], rules.Going(k.State))
		check(k, "replacing on m1 (GetShapeGoingByLocation)", goingByLocation[id][1]["m1"], k.State == rules.Replacing)
		check(k, "created on m1 (GetHealthByLocation)", healthByLocation[id]["m1"].Created, k.State == rules.Created)
		check(k, "outdated shape (GetOutdatedShapeIDs)", one(slices.Contains(outdatedShapes, id)), rules.Stale(k.State, k.Latest-one(k.Outdated), k.Latest))
	}

	// The care loops' reads: the rows in a hook wait; autohealing's candidates (outside a
	// cluster), which fleet.PlanHealing then decides on (fleet/care_queries_test.go).
	names := func(rows []db.Instance) map[string]bool {
		out := map[string]bool{}
		for _, row := range rows {
			out[row.Name] = true
		}

		return out
	}

	hooked, candidates := names(inHooks), names(healCandidates)
	for _, k := range cases {
		check(k, "in a hook (GetInstancesInHooks)", one(hooked[k.Name]), k.State == rules.Created && k.Hook != "")
		healable := k.State == rules.Replacing || k.State == rules.Missing || (k.State == rules.Created && k.Health == api.HealthUnhealthy && k.Hook == "")
		check(k, "heal candidate (GetHealCandidates)", one(candidates[k.Name]), healable)
	}
}
