package fleet

import (
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestPlanHealing walks instance states, health verdicts, hooks and shape settings: only
// unhealthy or missing instances of shapes with health.replace that are not degraded are
// replaced, and a replaced instance a crash left behind is finished by its owner (or by
// anyone past the grace).
func TestPlanHealing(t *testing.T) {
	now := time.Now()
	replace := &api.DeploymentShapeHealth{Command: []string{"true"}, Replace: true}
	shape := func(id int64, h *api.DeploymentShapeHealth, degraded string, replacing int) db.Shape {
		s := db.Shape{ID: id, Replacing: replacing}
		s.Health, s.StatusReason = h, degraded
		return s
	}

	shapes := []db.Shape{
		shape(1, replace, "", 0),
		shape(2, &api.DeploymentShapeHealth{Command: []string{"true"}}, "", 0), // checks, no replace
		shape(3, replace, "gave up", 0),                                        // degraded
		shape(4, nil, "", 1),                                                   // replace turned off mid-way
	}

	row := func(id int64, shapeID int64, state string, health string, hook string, owner string, age time.Duration) db.Instance {
		r := db.Instance{ID: id, ShapeID: shapeID, Name: "i", State: state, Owner: owner, StateChangedAt: now.Add(-age)}
		r.Health.Status, r.Hook.Hook = health, hook
		return r
	}

	cases := []struct {
		name   string
		Row    db.Instance
		active bool
		want   string // "", "replace" or "finish"
	}{
		{"unhealthy", row(1, 1, db.InstanceCreated, api.HealthUnhealthy, "", "me", 0), false, "replace"},
		{"unhealthy, already being replaced here", row(2, 1, db.InstanceCreated, api.HealthUnhealthy, "", "me", 0), true, ""},
		{"healthy", row(3, 1, db.InstanceCreated, api.HealthHealthy, "", "me", 0), false, ""},
		{"unhealthy while draining", row(4, 1, db.InstanceCreated, api.HealthUnhealthy, api.LifecycleTerminatingWait, "me", 0), false, ""},
		{"missing", row(5, 1, db.InstanceMissing, api.HealthUnknown, "", "me", 0), false, "replace"},
		{"being created", row(6, 1, db.InstanceCreating, api.HealthUnhealthy, "", "me", 0), false, ""},
		{"being deleted", row(7, 1, db.InstanceDeleting, api.HealthUnhealthy, "", "me", 0), false, ""},
		{"replacing, mine", row(8, 1, db.InstanceReplacing, api.HealthUnhealthy, "", "me", 0), false, "finish"},
		{"replacing, another's", row(9, 1, db.InstanceReplacing, api.HealthUnhealthy, "", "other", time.Minute), false, ""},
		{"replacing, another's past the grace", row(10, 1, db.InstanceReplacing, api.HealthUnhealthy, "", "other", OthersGrace+time.Second), false, "finish"},
		{"no replace", row(11, 2, db.InstanceCreated, api.HealthUnhealthy, "", "me", 0), false, ""},
		{"degraded shape", row(12, 3, db.InstanceCreated, api.HealthUnhealthy, "", "me", 0), false, ""},
		{"degraded shape, replacing left", row(13, 3, db.InstanceReplacing, api.HealthUnhealthy, "", "me", 0), false, "finish"},
		{"replace off, replacing left", row(14, 4, db.InstanceReplacing, api.HealthUnhealthy, "", "me", 0), false, "finish"},
		{"unreachable", unreachableRow(row(15, 1, db.InstanceCreated, api.HealthHealthy, "", "me", 0)), false, "replace"},
		{"unreachable, no replace", unreachableRow(row(16, 2, db.InstanceCreated, api.HealthHealthy, "", "me", 0)), false, ""},
		{"unreachable, being made", unreachableRow(row(17, 1, db.InstanceCreating, api.HealthUnknown, "", "me", 0)), false, ""},
	}

	for _, c := range cases {
		active := map[int64]bool{c.Row.ID: c.active}
		steps := PlanHealing(shapes, []db.Instance{c.Row}, active, "me", now, func(location string) bool { return location == "lost" })
		got := ""
		if len(steps) == 1 {
			got = "replace"
			if steps[0].Finish {
				got = "finish"
			}
		}

		if got != c.want || len(steps) > 1 {
			t.Errorf("%s: %q (%d steps), want %q", c.name, got, len(steps), c.want)
		}
	}
}

// unreachableRow puts an instance record on the member the test calls offline ("lost").
func unreachableRow(r db.Instance) db.Instance {
	r.Location = "lost"
	return r
}
