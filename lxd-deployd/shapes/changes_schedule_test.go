package shapes

import (
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A schedule says when the bounds change: adding, editing or removing one leaves instances
// as they are (no rollout), and it shows in Changes like every field.
func TestScheduleLeavesInstances(t *testing.T) {
	four, twenty := 4, 20
	base := api.DeploymentShapePut{ScalingMaximum: 3}
	scheduled := base
	scheduled.Schedule = []api.DeploymentShapeScheduledAction{{Name: "bh", Cron: "0 8 * * 1-5", ScalingMinimum: &four, ScalingMaximum: &twenty}}
	if TemplateChanged(base, scheduled) || TemplateChanged(scheduled, base) {
		t.Error("a schedule leaves instances as they are")
	}

	if changes := Changes(base, scheduled); len(changes) != 1 || changes[0].Field != "schedule" {
		t.Errorf("changes: %+v", changes)
	}
}
