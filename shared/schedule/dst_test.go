package schedule

import (
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// In Europe/Paris in 2026 the clocks go from 02:00 to 03:00 on 29 March (01:00 UTC) and
// from 03:00 back to 02:00 on 25 October (01:00 UTC).
func paris(t *testing.T) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Fatal(err)
	}

	return loc
}

// Occurrences across daylight-saving changes, with a fake clock (the times given): a time
// in the spring gap fires once at the end of the gap; a time in the repeated autumn hour
// fires once, at its first occurrence.
func TestNextAcrossDST(t *testing.T) {
	loc := paris(t)
	cases := []struct {
		name  string
		expr  string
		after time.Time
		want  []time.Time // successive occurrences (UTC)
	}{
		{"02:30 does not exist on 29 March: it fires at 03:00 CEST", "30 2 * * *", date(2026, 3, 28, 12, 0),
			[]time.Time{date(2026, 3, 29, 1, 0), date(2026, 3, 30, 0, 30)}},
		{"every half hour of 02:xx in the gap fires once, at 03:00", "*/30 2 * * *", date(2026, 3, 28, 12, 0),
			[]time.Time{date(2026, 3, 29, 1, 0), date(2026, 3, 30, 0, 0), date(2026, 3, 30, 0, 30)}},
		{"03:00 on the gap day is the same instant as the gap's times", "0,30 2,3 * * *", date(2026, 3, 28, 23, 0),
			[]time.Time{date(2026, 3, 29, 1, 0), date(2026, 3, 29, 1, 30), date(2026, 3, 30, 0, 0)}},
		{"02:30 happens twice on 25 October: it fires once, at the first", "30 2 * * *", date(2026, 10, 24, 12, 0),
			[]time.Time{date(2026, 10, 25, 0, 30), date(2026, 10, 26, 1, 30)}},
		{"seen from the second pass of the repeated hour, 02:30 is past", "30 2 * * *", date(2026, 10, 25, 1, 10),
			[]time.Time{date(2026, 10, 26, 1, 30)}},
		{"08:00 on weekdays moves an hour in UTC after the change", "0 8 * * 1-5", date(2026, 10, 22, 12, 0),
			[]time.Time{date(2026, 10, 23, 6, 0), date(2026, 10, 26, 7, 0)}},
		{"01:59 just before the gap", "59 1 29 3 *", date(2026, 3, 1, 0, 0),
			[]time.Time{date(2026, 3, 29, 0, 59), date(2027, 3, 29, 23, 59).AddDate(0, 0, -1)}},
	}
	for _, tc := range cases {
		c, err := Parse(tc.expr)
		if err != nil {
			t.Fatal(err)
		}

		at := tc.after
		for i, want := range tc.want {
			got, ok := c.Next(at, loc)
			if !ok || !got.Equal(want) {
				t.Errorf("%s: occurrence %d after %s is %s (%v), want %s (%s)", tc.name, i, at, got.UTC(), ok, want, want.In(loc))
				break
			}

			at = got
		}
	}
}

// Latest finds the last occurrence in a window by the same rules, whatever the window.
func TestLatestAcrossDST(t *testing.T) {
	loc := paris(t)
	c, _ := Parse("30 2 * * *")
	cases := []struct {
		name        string
		after, till time.Time
		want        time.Time // zero: none
	}{
		{"the gap's 02:30 is 03:00", date(2026, 3, 29, 0, 0), date(2026, 3, 29, 1, 0), date(2026, 3, 29, 1, 0)},
		{"not before the end of the gap", date(2026, 3, 29, 0, 0), date(2026, 3, 29, 0, 59), time.Time{}},
		{"first pass of the repeated hour", date(2026, 10, 25, 0, 0), date(2026, 10, 25, 1, 40), date(2026, 10, 25, 0, 30)},
		{"the second pass does not fire again", date(2026, 10, 25, 0, 35), date(2026, 10, 25, 1, 40), time.Time{}},
		{"a month down: the last one", date(2026, 1, 1, 0, 0), date(2026, 2, 1, 0, 0), date(2026, 1, 31, 1, 30)},
		{"empty window", date(2026, 1, 1, 0, 0), date(2026, 1, 1, 0, 0), time.Time{}},
		{"clock went back", date(2026, 1, 2, 0, 0), date(2026, 1, 1, 0, 0), time.Time{}},
	}
	for _, tc := range cases {
		got, ok := c.Latest(tc.after, tc.till, loc)
		if ok != !tc.want.IsZero() || ok && !got.Equal(tc.want) {
			t.Errorf("%s: latest in (%s, %s] is %s (%v), want %s", tc.name, tc.after, tc.till, got.UTC(), ok, tc.want)
		}
	}
}

// Other zones: a 30-minute change (Lord Howe), a southern-hemisphere one (Sydney, the
// clocks go forward on 4 October 2026 at 02:00) and a zone without DST.
func TestResolveOtherZones(t *testing.T) {
	for _, tc := range []struct {
		zone string
		wall [5]int
		want time.Time
	}{
		{"Australia/Sydney", [5]int{2026, 10, 4, 2, 30}, date(2026, 10, 3, 16, 0)},     // gap: 03:00 AEDT
		{"Australia/Lord_Howe", [5]int{2026, 10, 4, 2, 15}, date(2026, 10, 3, 15, 30)}, // gap 02:00-02:30: at 02:30 +11
		{"Asia/Tokyo", [5]int{2026, 3, 29, 2, 30}, date(2026, 3, 28, 17, 30)},
		{"America/New_York", [5]int{2026, 11, 1, 1, 30}, date(2026, 11, 1, 5, 30)}, // EDT, the first
	} {
		loc, err := time.LoadLocation(tc.zone)
		if err != nil {
			t.Fatal(err)
		}

		got := Resolve(tc.wall[0], time.Month(tc.wall[1]), tc.wall[2], tc.wall[3], tc.wall[4], loc)
		if !got.Equal(tc.want) {
			t.Errorf("%s %v: %s, want %s", tc.zone, tc.wall, got.UTC(), tc.want)
		}
	}
}

// Due applies only the latest occurrence of all actions in the window: a daemon down over
// a weekend applies Monday's business-hours once, not Friday's night action after it.
func TestDueMissedActions(t *testing.T) {
	four, twenty, one, two := 4, 20, 1, 2
	actions := []api.DeploymentShapeScheduledAction{
		{Name: "business-hours", Cron: "0 8 * * 1-5", TimeZone: "Europe/Paris", ScalingMinimum: &four, ScalingMaximum: &twenty},
		{Name: "night", Cron: "0 20 * * 1-5", TimeZone: "Europe/Paris", ScalingMinimum: &one, ScalingMaximum: &two},
	}

	cases := []struct {
		name        string
		after, till time.Time
		want        int
		at          time.Time
	}{
		{"down from Friday morning to Monday noon", date(2026, 11, 27, 6, 0), date(2026, 11, 30, 11, 0), 0, date(2026, 11, 30, 7, 0)},
		{"down from Friday morning to Saturday", date(2026, 11, 27, 6, 0), date(2026, 11, 28, 11, 0), 1, date(2026, 11, 27, 19, 0)},
		{"a normal tick just after 08:00", date(2026, 11, 30, 6, 59), date(2026, 11, 30, 7, 0), 0, date(2026, 11, 30, 7, 0)},
		{"nothing in the window", date(2026, 11, 30, 7, 0), date(2026, 11, 30, 18, 0), -1, time.Time{}},
	}
	for _, tc := range cases {
		i, at, ok := Due(actions, tc.after, tc.till)
		if i != tc.want || ok != (tc.want >= 0) || !at.Equal(tc.at) {
			t.Errorf("%s: due %d at %s (%v), want %d at %s", tc.name, i, at, ok, tc.want, tc.at)
		}
	}

	// A tie goes to the later action in the list.
	tied := []api.DeploymentShapeScheduledAction{actions[0], {Name: "also-eight", Cron: "0 8 * * *", TimeZone: "Europe/Paris", ScalingMinimum: &one, ScalingMaximum: &two}}
	if i, _, _ := Due(tied, date(2026, 11, 30, 6, 0), date(2026, 11, 30, 8, 0)); i != 1 {
		t.Errorf("a tie went to %d, want the later action (1)", i)
	}

	next, err := Upcoming(actions[0], date(2026, 11, 27, 12, 0), 3)
	if err != nil || len(next) != 3 || !next[0].Equal(date(2026, 11, 30, 7, 0)) || next[0].Location().String() != "Europe/Paris" {
		t.Errorf("upcoming: %v %v", next, err)
	}
}

// Next and Latest agree, and occurrences only move forward, for many expressions and
// zones over two years of daylight-saving changes.
func TestNextLatestAgree(t *testing.T) {
	exprs := []string{"30 2 * * *", "*/20 1-3 * * *", "0 0 * * 0", "15 3 25-31 3,10 *", "0 2 * * *", "45 1 * * *"}
	zones := []string{"Europe/Paris", "America/New_York", "Australia/Lord_Howe", "UTC", "America/Santiago"}
	for _, z := range zones {
		loc, _ := time.LoadLocation(z)
		for _, e := range exprs {
			c, _ := Parse(e)
			at := date(2026, 1, 1, 0, 0)
			for i := 0; i < 300; i++ {
				next, ok := c.Next(at, loc)
				if !ok || !next.After(at) {
					t.Fatalf("%s %q: next after %s is %s (%v)", z, e, at, next, ok)
				}

				latest, ok := c.Latest(at, next, loc)
				if !ok || !latest.Equal(next) {
					t.Fatalf("%s %q: latest in (%s, %s] is %s (%v)", z, e, at, next, latest, ok)
				}

				if _, ok := c.Latest(at, next.Add(-time.Nanosecond), loc); ok && next.Add(-time.Nanosecond).After(at) {
					t.Fatalf("%s %q: an occurrence between %s and %s that Next skipped", z, e, at, next)
				}

				at = next
			}
		}
	}
}
