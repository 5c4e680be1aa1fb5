package schedule

import (
	"strings"
	"testing"
	"time"
)

// Parse takes the five fields with lists, ranges, steps and names, and refuses the rest
// naming the field.
func TestParse(t *testing.T) {
	ok := []struct {
		expr string
		at   time.Time // a time it matches (UTC)
		not  time.Time // a time it does not
	}{
		{"0 8 * * 1-5", date(2026, 11, 30, 8, 0), date(2026, 11, 29, 8, 0)},                      // Monday, Sunday
		{"*/15 * * * *", date(2026, 1, 1, 3, 45), date(2026, 1, 1, 3, 50)},                       //
		{"0 0 1,15 * *", date(2026, 2, 15, 0, 0), date(2026, 2, 14, 0, 0)},                       //
		{"0 12 * jan-mar MON", date(2026, 3, 2, 12, 0), date(2026, 4, 6, 12, 0)},                 // names, any case
		{"0 0 * * 7", date(2026, 11, 29, 0, 0), date(2026, 11, 30, 0, 0)},                        // 7 is Sunday
		{"5/20 * * * *", date(2026, 1, 1, 0, 45), date(2026, 1, 1, 0, 40)},                       // a/n: 5, 25, 45
		{"0 9-17/4 * * *", date(2026, 1, 1, 13, 0), date(2026, 1, 1, 11, 0)},                     // 9, 13, 17
		{"0 0 13 * 5", date(2026, 11, 6, 0, 0), date(2026, 11, 7, 0, 0)},                         // Friday or the 13th
		{"  0   8  *  *  1-5  ", date(2026, 11, 30, 8, 0), date(2026, 11, 29, 8, 0)},             // spaces
		{"59 23 31 12 *", date(2026, 12, 31, 23, 59), date(2026, 12, 30, 23, 59)},                //
		{"0 0 * * sun,sat", date(2026, 11, 28, 0, 0), date(2026, 11, 27, 0, 0)},                  //
		{"0,30 8 * * *", date(2026, 11, 28, 8, 30), date(2026, 11, 28, 8, 15)},                   //
		{"* * * * *", date(2026, 11, 28, 8, 31), time.Date(2026, 11, 28, 8, 31, 1, 0, time.UTC)}, // seconds never match
	}
	for _, tc := range ok {
		c, err := Parse(tc.expr)
		if err != nil {
			t.Errorf("Parse(%q): %v", tc.expr, err)
			continue
		}

		if got, _ := c.Next(tc.at.Add(-time.Second), time.UTC); !got.Equal(tc.at) {
			t.Errorf("%q: next after %s is %s, want %s", tc.expr, tc.at.Add(-time.Second), got, tc.at)
		}

		if got, _ := c.Next(tc.not.Add(-time.Second), time.UTC); got.Equal(tc.not) {
			t.Errorf("%q must not fire at %s", tc.expr, tc.not)
		}
	}

	bad := []struct{ expr, want string }{
		{"", "has 0 fields"},
		{"0 8 * *", "has 4 fields"},
		{"0 8 * * 1-5 2026", "has 6 fields"},
		{"60 * * * *", "minute field"},
		{"* 24 * * *", "hour field"},
		{"* * 0 * *", "day-of-month field"},
		{"* * * 13 *", "month field"},
		{"* * * * 8", "day-of-week field"},
		{"5-1 * * * *", "goes backwards"},
		{"*/0 * * * *", "step"},
		{"*/x * * * *", "step"},
		{"1,,2 * * * *", "empty list item"},
		{"* * * foo *", "or a name"},
		{"-1 * * * *", "minute field"},
		{strings.Repeat("1,", 200) + "1 * * * *", "longer than"},
	}
	for _, tc := range bad {
		_, err := Parse(tc.expr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Parse(%q) = %v, want an error with %q", tc.expr, err, tc.want)
		}
	}
}

func date(y int, m time.Month, d int, h int, mi int) time.Time {
	return time.Date(y, m, d, h, mi, 0, 0, time.UTC)
}
