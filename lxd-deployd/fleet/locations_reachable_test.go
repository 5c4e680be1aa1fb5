package fleet

import (
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
)

// TestPlanReachability follows a member through loss and return: each instance on it is
// reported unreachable once, nothing while it stays offline, reachable once when it
// returns; an instance gone while unreachable leaves without a word.
func TestPlanReachability(t *testing.T) {
	rows := []db.Instance{{ID: 1, Name: "a", Location: "m1"}, {ID: 2, Name: "b", Location: "m2"}, {ID: 3, Name: "c", Location: "m2"}, {ID: 4, Name: "d"}}
	online := []shapes.Member{{Name: "m1", Online: true}, {Name: "m2", Online: true}}
	offline := []shapes.Member{{Name: "m1", Online: true}, {Name: "m2"}}
	describe := func(changes []ReachChange) map[string]bool {
		got := map[string]bool{}
		for _, c := range changes {
			got[c.Row.Name] = c.Unreachable
		}

		return got
	}

	changes, reported := PlanReachability(rows, online, map[int64]bool{})
	if len(changes) != 0 || len(reported) != 0 {
		t.Fatalf("all online: changes %v, reported %v, want none", describe(changes), reported)
	}

	changes, reported = PlanReachability(rows, offline, reported)
	if got := describe(changes); len(got) != 2 || !got["b"] || !got["c"] {
		t.Fatalf("m2 offline: changes %v, want b and c unreachable", got)
	}

	changes, reported = PlanReachability(rows, offline, reported)
	if len(changes) != 0 {
		t.Fatalf("m2 still offline: changes %v, want none (no event per poll)", describe(changes))
	}

	// c is deleted (replaced) while m2 is offline; m2 returns.
	changes, reported = PlanReachability(rows[:2], online, reported)
	if got := describe(changes); len(got) != 1 || got["b"] {
		t.Fatalf("m2 back: changes %v, want b reachable only", got)
	}

	if len(reported) != 0 {
		t.Errorf("m2 back: still reported unreachable %v", reported)
	}

	// A new holder of the lease reports what is unreachable when it starts.
	changes, _ = PlanReachability(rows, offline, map[int64]bool{})
	if len(changes) != 2 {
		t.Errorf("a new holder with m2 offline: changes %v, want b and c", describe(changes))
	}

	// LXD not clustered: no members, nothing unreachable.
	changes, _ = PlanReachability(rows, nil, map[int64]bool{})
	if len(changes) != 0 {
		t.Errorf("not clustered: changes %v, want none", describe(changes))
	}
}
