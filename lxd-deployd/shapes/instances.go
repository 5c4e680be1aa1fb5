package shapes

import (
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// The predicates over one instance record: the rules of shared/rules (where each says why
// it is what it is) read off a db.Instance. None is defined here: the SQL that counts
// instances is built from the same lists, and db's TestRulesSQLAgreeWithGo holds the two
// to one answer over every instance state.

// Counted says whether an instance record counts toward its shape's size
// (scaling_current): rules.Counted.
func Counted(row db.Instance) bool {
	return rules.Counted(row.State)
}

// Going says whether an instance record is on its way out while LXD may still hold the
// instance: rules.Going. It counts against the maximum and max_surge (CheckGrow).
func Going(row db.Instance) bool {
	return rules.Going(row.State)
}

// Held says whether an instance counts against scaling_maximum: rules.Held.
func Held(row db.Instance) bool {
	return rules.Held(row.State)
}

// Outdated says whether an instance was made from an older revision than latest:
// rules.Outdated.
func Outdated(row db.Instance, latest int) bool {
	return rules.Outdated(row.Revision, latest)
}

// Stale says whether LXD holds an outdated instance: rules.Stale.
func Stale(row db.Instance, latest int) bool {
	return rules.Stale(row.State, row.Revision, latest)
}

// Settled says whether an instance is made and out of its launching:wait: rules.Settled.
func Settled(row db.Instance) bool {
	return rules.Settled(row.State, row.Hook.Hook)
}

// Ready says whether an instance of a shape with health object h counts as ready as far as
// our records know: rules.Ready, checked when h has checks.
func Ready(h *api.DeploymentShapeHealth, row db.Instance) bool {
	_, checked := health.Parse(h)
	return rules.Ready(row.State, row.Hook.Hook, row.Health.Status, checked)
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

// Clamp moves a target size into the bounds [minimum, maximum]: rules.Clamp.
func Clamp(target int, minimum int, maximum int) int {
	return rules.Clamp(target, minimum, maximum)
}

// CreatedNames are the names of the rows LXD has made (state created): what a listing of
// LXD must show.
func CreatedNames(rows []db.Instance) []string {
	var names []string
	for _, row := range rows {
		if row.State == rules.Created {
			names = append(names, row.Name)
		}
	}

	return names
}
