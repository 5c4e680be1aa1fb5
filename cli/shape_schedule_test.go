package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The schedule table shows each action's bounds and next occurrences in its own zone, and
// the last firing as a note.
func TestScheduleListing(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}

	four, twenty, one := 4, 20, 1
	last := time.Date(2026, 3, 29, 1, 0, 0, 0, time.UTC)
	s := &api.DeploymentShapeSchedule{
		LastAction: "business-hours", LastAt: &last,
		Actions: []api.DeploymentShapeScheduleEntry{
			{DeploymentShapeScheduledAction: api.DeploymentShapeScheduledAction{Name: "business-hours", Cron: "0 8 * * 1-5", TimeZone: "Europe/Paris", ScalingMinimum: &four, ScalingMaximum: &twenty, Size: &one},
				Next: []time.Time{time.Date(2026, 3, 30, 8, 0, 0, 0, paris), time.Date(2026, 3, 31, 8, 0, 0, 0, paris)}},
			{DeploymentShapeScheduledAction: api.DeploymentShapeScheduledAction{Name: "never", Cron: "0 0 29 2 *", ScalingMinimum: &one, ScalingMaximum: &one}},
		},
	}

	var out bytes.Buffer
	err = scheduleListing(s).render(&out, formatTable)
	if err != nil {
		t.Fatal(err)
	}

	for _, want := range []string{"business-hours", "Europe/Paris", "[4, 20]", "2026-03-30 08:00 CEST, 2026-03-31 08:00 CEST", "| never ", "UTC", "(never again)", "Last fired: business-hours, for 2026-03-29T01:00:00Z"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
}
