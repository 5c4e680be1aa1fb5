package db

import "strings"

// InstanceStates lists every state an instance record can be in, for tests that walk them
// all (the counting table test in lxd-deployd/shapes).
var InstanceStates = []string{InstanceCreating, InstanceCreated, InstanceDeleting, InstanceMissing, InstanceReplacing}

// countedStates is the one definition of which instance records a shape counts
// (scaling_current and what the minimum protects): instances being made or made. The SQL
// below (countedInstance) and the Go predicate shapes.Counted both derive from this list,
// so the two cannot disagree; a table test over every state holds them to it.
var countedStates = []string{InstanceCreating, InstanceCreated}

// IsCountedState says whether a record in state counts. Callers use shapes.Counted.
func IsCountedState(state string) bool {
	for _, s := range countedStates {
		if s == state {
			return true
		}
	}

	return false
}

// stateIn is an SQL condition on i.state matching the given states (constants, never input).
func stateIn(states []string) string {
	return "i.state IN ('" + strings.Join(states, "', '") + "')"
}

// countedInstance is countedStates as a condition on an instance row i.
var countedInstance = stateIn(countedStates)

// outdatedInstance says an instance row i was made from an older revision than its shape
// si's latest: shapes.Outdated in SQL.
const outdatedInstance = "i.revision < si.revision"

// settledInstance says an instance row i is made and out of its launching:wait: the first
// half of shapes.Ready (the other half, healthy when checked, depends on the shape).
const settledInstance = "(i.state = 'created' AND i.hook != 'launching:wait')"
