package shapes

import (
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The predicates over one instance that every path shares. Each has one definition: the
// SQL that counts instances (db/instance_states.go) is built from the same list, and
// TestPredicatesAgreeWithSQL holds the two to one answer over every instance state.

// Counted says whether an instance record counts toward its shape's size
// (scaling_current): being made or made.
func Counted(row db.Instance) bool {
	return db.IsCountedState(row.State)
}

// Going says whether an instance record is on its way out while LXD may still hold the
// instance (being deleted or replaced): it no longer counts toward the size, but still
// against the maximum and a rollout's max_surge (CheckGrow).
func Going(row db.Instance) bool {
	return db.IsGoingState(row.State)
}

// Held says whether an instance counts against scaling_maximum: from the moment its launch
// is reserved until LXD has confirmed its deletion.
func Held(row db.Instance) bool {
	return Counted(row) || Going(row)
}

// Outdated says whether an instance was made from an older revision than the shape's
// latest: what a rollout replaces.
func Outdated(row db.Instance, latest int) bool {
	return row.Revision < latest
}

// Settled says whether an instance is made and out of its launching:wait.
func Settled(row db.Instance) bool {
	return row.State == db.InstanceCreated && row.Hook.Hook != api.LifecycleLaunchingWait
}

// Ready says whether an instance of a shape with health object h counts as ready as far as
// our records know: settled, and healthy when the shape has checks.
func Ready(h *api.DeploymentShapeHealth, row db.Instance) bool {
	if !Settled(row) {
		return false
	}

	_, checked := health.Parse(h)
	return !checked || row.Health.Status == api.HealthHealthy
}

// ReadyFor says whether an instance counts as ready for a rollout: Ready, Running in LXD,
// and all that for at least minReady. Every readiness decision of the rollout engine and
// its status goes through here.
func ReadyFor(checks *api.DeploymentShapeHealth, row db.Instance, live *lxdapi.Instance, minReady time.Duration, now time.Time) bool {
	if !Ready(checks, row) || live == nil || live.StatusCode != lxdapi.Running {
		return false
	}

	return !now.Before(RunningSince(row, live).Add(minReady))
}

// RunningSince is when an instance last started, as far as we know.
func RunningSince(row db.Instance, live *lxdapi.Instance) time.Time {
	since := row.StateChangedAt
	if live != nil && live.LastUsedAt.After(since) {
		since = live.LastUsedAt
	}

	return since
}

// Clamp moves a target size into the bounds [minimum, maximum].
func Clamp(target int, minimum int, maximum int) int {
	return min(max(target, minimum), maximum)
}

// CreatedNames are the names of the rows LXD has made (state created): what a listing of
// LXD must show.
func CreatedNames(rows []db.Instance) []string {
	var names []string
	for _, row := range rows {
		if row.State == db.InstanceCreated {
			names = append(names, row.Name)
		}
	}

	return names
}
