// Package rules holds the states of an instance record and the rules over them that every
// path shares: which instances count toward a shape's bounds, which are on their way out,
// outdated, settled or ready, how a target is clamped into the bounds and how much room the
// maximum leaves. The daemon's SQL (sql.go), its Go code, the governor's policy and the
// CLI all ask here, so that no copy of a rule can drift from another: a table test in db
// holds the SQL fragments and the predicates to one answer over every state.
//
// The package is below the cgo line (it imports nothing but shared/api), so the CLI and a
// governor built with CGO_ENABLED=0 use the same rules as the daemon.
package rules

import (
	"slices"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The states of an instance record (api.DeploymentInstance.State); LXD's own status is
// read live and is not one of them.
const (
	// Creating: the record is reserved (the launch passed the bound check) and the LXD
	// instance is being made.
	Creating = "creating"

	// Created: the LXD instance exists.
	Created = "created"

	// Deleting: the LXD instance is being deleted.
	Deleting = "deleting"

	// Missing: reconcile found the LXD instance gone (it comes back to Created if LXD shows
	// it again).
	Missing = "missing"

	// Replacing: autohealing (or a drain) is replacing the instance; it is deleted once its
	// replacement is made.
	Replacing = "replacing"
)

// States lists every state, for the tests that walk them all.
var States = []string{Creating, Created, Deleting, Missing, Replacing}

// uncounted are the states that do not count toward a shape's size (scaling_current, what
// the minimum protects): an instance being deleted or replaced is already leaving, so its
// replacement (or the next scale-down) must not count it twice, and a missing one is not in
// LXD at all. Every other state counts, a state unknown to this build included: an
// instance being made or made is the shape's.
var uncounted = []string{Deleting, Missing, Replacing}

// going are the states of instances on their way out that LXD may still hold. They left
// the size, but LXD holds them until it has deleted them, so they count against the
// maximum and a rollout's max_surge: a launch right after a delete waits for it rather
// than let LXD hold one more than the maximum.
var going = []string{Deleting, Replacing}

// Counted says whether a record in state counts toward its shape's size (scaling_current)
// and so toward both bounds.
func Counted(state string) bool {
	return !slices.Contains(uncounted, state)
}

// Going says whether a record in state is on its way out while LXD may still hold it: it
// no longer counts toward the size, but still against the maximum.
func Going(state string) bool {
	return slices.Contains(going, state)
}

// Held says whether a record in state counts against the maximum: from the moment its
// launch is reserved until LXD has confirmed its deletion.
func Held(state string) bool {
	return Counted(state) || Going(state)
}

// Outdated says whether an instance made from revision is older than its shape's latest:
// what a rollout replaces. Revisions only grow (a rollback records a new one), so an
// instance is never newer than the latest.
func Outdated(revision int, latest int) bool {
	return revision < latest
}

// Stale says whether LXD holds an outdated instance (created, and Outdated): what the
// in-place pass can update without a replacement. One being made is left to its launch,
// one on its way out to its delete.
func Stale(state string, revision int, latest int) bool {
	return state == Created && Outdated(revision, latest)
}

// Settled says whether an instance is made and out of its launching:wait hook: until its
// launching hook is answered, the instance is not meant to serve.
func Settled(state string, hook string) bool {
	return state == Created && hook != api.LifecycleLaunchingWait
}

// Terminating says whether an instance waits in its terminating:wait hook: it still
// counts, but is already on its way out, so a scale-down does not spend it twice.
func Terminating(state string, hook string) bool {
	return state == Created && hook == api.LifecycleTerminatingWait
}

// Ready says whether an instance counts as ready as far as the records know: settled, and
// healthy when its shape has health checks (checked). Without checks, made is all we can
// know. A rollout also asks LXD (shapes.ReadyFor).
func Ready(state string, hook string, health string, checked bool) bool {
	return Settled(state, hook) && (!checked || health == api.HealthHealthy)
}

// ReadyCount is Ready over counts: of a shape's settled instances (settledHealthy of them
// healthy), how many are ready.
func ReadyCount(checked bool, settled int, settledHealthy int) int {
	if checked {
		return settledHealthy
	}

	return settled
}

// Clamp moves a target size into the bounds [minimum, maximum] (validate.Bounds keeps
// minimum <= maximum): a governor, a schedule or a rollout asking for more or less than
// the bounds allow gets the nearest bound, not a refusal.
func Clamp(target int, minimum int, maximum int) int {
	return min(max(target, minimum), maximum)
}

// Room is how many instances the maximum leaves for: maximum less those counted (current)
// and those on their way out (going), which LXD may still hold; never below 0. A launch
// fits only while Room > 0.
func Room(maximum int, current int, going int) int {
	return max(0, maximum-current-going)
}
