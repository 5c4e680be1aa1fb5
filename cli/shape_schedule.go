package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/schedule"
)

// scheduleNextShown is how many next occurrences the table shows per action (json and
// yaml show all the daemon sent).
const scheduleNextShown = 3

// shapeScheduleCommand is "lxd-deploy deployment shape schedule": a shape's scheduled
// actions and when they fire next, by the daemon's clock. The schedule itself is the
// shape's schedule field (shape edit, or a templated config).
func (a *app) shapeScheduleCommand() *cobra.Command {
	return a.listCommand(&cobra.Command{
		Use:   "schedule [<remote>:]<deployment> <shape>",
		Short: "Show a shape's scheduled actions and their next occurrences",
		Long: "Show a shape's scheduled actions (its schedule field: set it with \"shape edit\" or a\n" +
			"templated config) with their next occurrences in each action's time zone, and the last\n" +
			"action fired. An action sets scaling_minimum and scaling_maximum when it fires; the\n" +
			"governor is asked to scale when the shape is outside them (doc/governors.md).",
		Args: exactArgs(2),
	}, func(args []string) (listing, error) {
		t, err := a.shapeTarget(args[0], args[1])
		if err != nil {
			return listing{}, err
		}

		schedule, err := t.server.GetDeploymentShapeSchedule(t.name, args[1])
		if err != nil {
			return listing{}, err
		}

		return scheduleListing(schedule), nil
	})
}

// scheduleListing is the table of a shape's schedule, with the last firing as a note.
func scheduleListing(s *api.DeploymentShapeSchedule) listing {
	rows := make([][]string, 0, len(s.Actions))
	for _, e := range s.Actions {
		zone := e.TimeZone
		if zone == "" {
			zone = "UTC"
		}

		size := ""
		if e.Size != nil {
			size = strconv.Itoa(*e.Size)
		}

		// JSON keeps the offset, not the zone: read the times in the action's zone again so
		// that they show its abbreviation (CET, CEST).
		loc, err := schedule.Location(e.DeploymentShapeScheduledAction)
		if err != nil {
			loc = time.UTC
		}

		var next []string
		for i, t := range e.Next {
			if i == scheduleNextShown {
				break
			}

			next = append(next, t.In(loc).Format("2006-01-02 15:04 MST"))
		}

		if len(next) == 0 {
			next = []string{"(never again)"}
		}

		rows = append(rows, []string{e.Name, e.Cron, zone, fmt.Sprintf("[%s, %s]", intOrUnset(e.ScalingMinimum), intOrUnset(e.ScalingMaximum)), size, strings.Join(next, ", ")})
	}

	notes := []string{}
	switch {
	case s.LastAction != "" && s.LastAt != nil:
		notes = append(notes, fmt.Sprintf("Last fired: %s, for %s", s.LastAction, s.LastAt.Format(time.RFC3339)))
	case len(s.Actions) > 0:
		notes = append(notes, "No action fired yet")
	}

	return listing{header: []string{"NAME", "CRON", "TIME ZONE", "BOUNDS", "SIZE", "NEXT"}, rows: rows, data: s, notes: notes}
}

func intOrUnset(v *int) string {
	if v == nil {
		return "-"
	}

	return strconv.Itoa(*v)
}
