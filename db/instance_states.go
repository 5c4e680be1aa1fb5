package db

import (
	"slices"
	"strings"
)

// InstanceStates lists every state an instance record can be in, for tests that walk them
// all (the counting table test in lxd-deployd/shapes).
var InstanceStates = []string{InstanceCreating, InstanceCreated, InstanceDeleting, InstanceMissing, InstanceReplacing}

// uncountedStates is the one definition of which instance records a shape does not count
// (in scaling_current, what the minimum protects): those being deleted or replaced and
// those LXD lost. Every other state counts: being made or made. The SQL below
// (countedInstance) and the Go predicate shapes.Counted both derive from this list, so the
// two cannot disagree; a table test over every state holds them to it.
var uncountedStates = []string{InstanceDeleting, InstanceMissing, InstanceReplacing}

// IsCountedState says whether a record in state counts. Callers use shapes.Counted.
func IsCountedState(state string) bool {
	return !slices.Contains(uncountedStates, state)
}

// stateList is states as an SQL list (constants, never input).
func stateList(states []string) string {
	return "('" + strings.Join(states, "', '") + "')"
}

// countedInstance is the counted states as a condition on an instance row i.
var countedInstance = "i.state NOT IN " + stateList(uncountedStates)

// goingStates are the records of instances on their way out that LXD may still hold:
// being deleted, or being replaced (autohealing). They no longer count in scaling_current,
// but they count against scaling_maximum and a rollout's max_surge until LXD has deleted
// them (shapes.Going, shapes.CheckGrow).
var goingStates = []string{InstanceDeleting, InstanceReplacing}

// IsGoingState says whether a record in state is on its way out. Callers use shapes.Going.
func IsGoingState(state string) bool {
	return slices.Contains(goingStates, state)
}

// goingInstance is goingStates as a condition on an instance row i.
var goingInstance = "i.state IN " + stateList(goingStates)

// outdatedInstance says an instance row i was made from an older revision than its shape
// si's latest: shapes.Outdated in SQL.
const outdatedInstance = "i.revision < si.revision"

// settledInstance says an instance row i is made and out of its launching:wait: the first
// half of shapes.Ready (the other half, healthy when checked, depends on the shape).
const settledInstance = "(i.state = 'created' AND i.hook != 'launching:wait')"
