package validate

import (
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Bad scheduled actions are refused with the field named and what to do.
func TestShapeSchedule(t *testing.T) {
	n := func(v int) *int { return &v }
	good := api.DeploymentShapeScheduledAction{Name: "business-hours", Cron: "0 8 * * 1-5", TimeZone: "Europe/Paris", ScalingMinimum: n(4), ScalingMaximum: n(20)}
	err := ShapeSchedule([]api.DeploymentShapeScheduledAction{good, {Name: "night", Cron: "0 20 * * *", ScalingMinimum: n(0), ScalingMaximum: n(2), Size: n(1)}})
	if err != nil {
		t.Fatal(err)
	}

	with := func(change func(a *api.DeploymentShapeScheduledAction)) []api.DeploymentShapeScheduledAction {
		a := good
		change(&a)
		return []api.DeploymentShapeScheduledAction{a}
	}

	cases := []struct {
		actions []api.DeploymentShapeScheduledAction
		want    string
	}{
		{with(func(a *api.DeploymentShapeScheduledAction) { a.TimeZone = "Europe/Pariss" }), "schedule[0].time_zone"},
		{with(func(a *api.DeploymentShapeScheduledAction) { a.TimeZone = "Local" }), "schedule[0].time_zone"},
		{with(func(a *api.DeploymentShapeScheduledAction) { a.Cron = "0 8 * *" }), "schedule[0].cron"},
		{with(func(a *api.DeploymentShapeScheduledAction) { a.Cron = "0 0 30 2 *" }), "never fires"},
		{with(func(a *api.DeploymentShapeScheduledAction) { a.ScalingMinimum = n(21) }), "schedule[0].scaling_maximum (20) must be at least schedule[0].scaling_minimum (21)"},
		{with(func(a *api.DeploymentShapeScheduledAction) { a.ScalingMinimum = nil }), "schedule[0].scaling_minimum is required"},
		{with(func(a *api.DeploymentShapeScheduledAction) { a.ScalingMaximum = nil }), "schedule[0].scaling_maximum is required"},
		{with(func(a *api.DeploymentShapeScheduledAction) { a.ScalingMinimum = n(-1) }), "schedule[0].scaling_minimum must be 0 or more"},
		{with(func(a *api.DeploymentShapeScheduledAction) { a.Size = n(30) }), "schedule[0].size"},
		{with(func(a *api.DeploymentShapeScheduledAction) { a.Name = "" }), "schedule[0].name"},
		{[]api.DeploymentShapeScheduledAction{good, good}, "schedule[1].name: action \"business-hours\" is in the schedule twice"},
	}
	for _, tc := range cases {
		err := ShapeSchedule(tc.actions)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.actions, err, tc.want)
		}
	}

	// Through Shape, as every write path calls it.
	put := api.DeploymentShapePut{ScalingMaximum: 1, Schedule: with(func(a *api.DeploymentShapeScheduledAction) { a.Cron = "bad" })}
	if err := Shape(put); err == nil || !strings.Contains(err.Error(), "schedule[0].cron") {
		t.Errorf("Shape: %v", err)
	}
}
