package validate

import (
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/schedule"
)

// scheduleActionsMax bounds a shape's schedule: enough for a week of distinct hours,
// short enough that every pass of the scheduler stays cheap.
const scheduleActionsMax = 64

// neverFires is a date the check that an expression fires at all counts from.
var neverFires = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// ShapeSchedule checks a shape's scheduled actions: a unique name each, a cron expression
// that parses and fires, a known IANA time zone, both bounds given with minimum <= maximum,
// and a size within them. Errors name the field (schedule[0].cron).
func ShapeSchedule(actions []api.DeploymentShapeScheduledAction) error {
	if len(actions) > scheduleActionsMax {
		return fmt.Errorf("schedule lists %d actions: at most %d", len(actions), scheduleActionsMax)
	}

	seen := map[string]bool{}
	for i, a := range actions {
		at := fmt.Sprintf("schedule[%d]", i)
		err := Name("schedule action", a.Name)
		if err != nil {
			return fmt.Errorf("%s.name: %w", at, err)
		}

		if seen[a.Name] {
			return fmt.Errorf("%s.name: action %q is in the schedule twice: give each action its own name", at, a.Name)
		}

		seen[a.Name] = true
		c, err := schedule.Parse(a.Cron)
		if err != nil {
			return fmt.Errorf("%s.cron: %w", at, err)
		}

		if _, ok := c.Next(neverFires, time.UTC); !ok {
			return fmt.Errorf("%s.cron: %q never fires (no such day): fix the day-of-month or month", at, a.Cron)
		}

		_, err = schedule.Location(a)
		if err != nil {
			return fmt.Errorf("%s.time_zone: %w", at, err)
		}

		if a.ScalingMinimum == nil {
			return fmt.Errorf("%s.scaling_minimum is required: the bounds the action sets", at)
		}

		if a.ScalingMaximum == nil {
			return fmt.Errorf("%s.scaling_maximum is required: the bounds the action sets", at)
		}

		if *a.ScalingMinimum < 0 {
			return fmt.Errorf("%s.scaling_minimum must be 0 or more, got %d", at, *a.ScalingMinimum)
		}

		if *a.ScalingMaximum < *a.ScalingMinimum {
			return fmt.Errorf("%s.scaling_maximum (%d) must be at least %s.scaling_minimum (%d)", at, *a.ScalingMaximum, at, *a.ScalingMinimum)
		}

		if a.Size != nil && (*a.Size < *a.ScalingMinimum || *a.Size > *a.ScalingMaximum) {
			return fmt.Errorf("%s.size (%d) must be within the action's bounds [%d, %d]", at, *a.Size, *a.ScalingMinimum, *a.ScalingMaximum)
		}
	}

	return nil
}
