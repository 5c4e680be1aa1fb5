package fleet

import (
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// An autohealing round observes (the shapes and instance records), plans (PlanHealing, a
// pure function with table tests) and acts (autohealer.round starts each step).

// HealStep is one instance autohealing acts on: a replacement to start (cause says why),
// or, with finish, a replaced instance whose delete a crash cut short.
type HealStep struct {
	Shape  db.Shape
	Row    db.Instance
	Cause  string
	Finish bool

	// Unreachable: the instance is replaced because its LXD member is offline, not for a
	// verdict (holds do not apply).
	Unreachable bool
}

// PlanHealing decides which instances to replace. active says which old instances this
// daemon is already replacing; the budget, checked in each reservation, holds the rest
// back. unreachable says whether an LXD member is offline (its instances are replaced on
// the others, doc/placement.md).
func PlanHealing(shapes []db.Shape, rows []db.Instance, active map[int64]bool, owner string, now time.Time, unreachable func(location string) bool) []HealStep {
	byID := map[int64]db.Shape{}
	for _, s := range healingShapes(shapes) {
		byID[s.ID] = s
	}

	var steps []HealStep
	for _, row := range rows {
		shape, ok := byID[row.ShapeID]
		if !ok || active[row.ID] {
			continue
		}

		switch {
		case row.State == db.InstanceReplacing && (row.Owner == owner || now.Sub(row.StateChangedAt) > OthersGrace):
			// A crash came between the replacement's launch and the old instance's delete.
			steps = append(steps, HealStep{Shape: shape, Row: row, Finish: true})
		case shape.StatusReason != "" || shape.Health == nil || !shape.Health.Replace:
			// Degraded (autohealing stopped until someone changes the shape), or off.
		case row.State == db.InstanceCreated && unreachable != nil && unreachable(row.Location):
			steps = append(steps, HealStep{Shape: shape, Row: row, Unreachable: true, Cause: fmt.Sprintf("instance %s is unreachable: its LXD member %s is offline", row.Name, row.Location)})
		case row.State == db.InstanceMissing:
			steps = append(steps, HealStep{Shape: shape, Row: row, Cause: fmt.Sprintf("instance %s is missing from LXD", row.Name)})
		case row.State == db.InstanceCreated && row.Health.Status == api.HealthUnhealthy && row.Hook.Hook == "":
			steps = append(steps, HealStep{Shape: shape, Row: row, Cause: fmt.Sprintf("instance %s is unhealthy: %s", row.Name, health.Summary(row.Health))})
		}
	}

	return steps
}

// healingShapes are the shapes autohealing looks at: with health.replace, or with a
// replacement under way (finished even once replace is off).
func healingShapes(shapes []db.Shape) []db.Shape {
	var out []db.Shape
	for _, s := range shapes {
		settings, ok := health.Parse(s.Health)
		if ok && settings.Replace || s.Replacing > 0 {
			out = append(out, s)
		}
	}

	return out
}
