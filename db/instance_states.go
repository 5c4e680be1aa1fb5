package db

import (
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// The rules over instance states live in shared/rules, below the cgo line, where the Go
// predicates and these SQL fragments are built from the same lists; the queries of this
// package name them here. rules' table test (db/rules_test.go) holds the queries and the
// predicates to one answer over every state.

// InstanceStates lists every state an instance record can be in, for tests that walk them
// all.
var InstanceStates = rules.States

// instanceRow is an instance row as the queries alias it (i).
const instanceRow = rules.SQL("i")

// countedInstance is rules.Counted on an instance row i.
var countedInstance = instanceRow.Counted()

// goingInstance is rules.Going on an instance row i.
var goingInstance = instanceRow.Going()

// replacingInstance is an instance row i being replaced.
var replacingInstance = instanceRow.In(rules.Replacing)

// terminatingInstance is rules.Terminating on an instance row i.
var terminatingInstance = instanceRow.Terminating()

// outdatedInstance is rules.Outdated on an instance row i of a shape row si.
var outdatedInstance = instanceRow.Outdated("si")

// settledInstance is rules.Settled on an instance row i: the first half of rules.Ready
// (the other half, healthy when checked, depends on the shape).
var settledInstance = instanceRow.Settled()

// readyCheckedInstance is rules.Ready on an instance row i of a shape with health checks.
var readyCheckedInstance = instanceRow.Ready(true)
