// Package schedule holds the rules of a shape's scheduled actions (doc/governors.md,
// "Scheduled actions"): a five-field cron expression, its occurrences in an IANA time zone
// across daylight-saving changes, and which action is due. It is cgo-free and pure (every
// function takes the time it reasons about), so the daemon, the CLI and the tests share it
// and tests use a fake clock.
package schedule

import (
	"fmt"
	"strconv"
	"strings"
)

// Cron is a parsed five-field cron expression: minute hour day-of-month month day-of-week.
type Cron struct {
	minute, hour, dom, month, dow uint64 // bit i set: value i matches

	// domAny and dowAny record a field given as "*" (or "*/1"): as in Vixie cron and
	// POSIX, when both day fields are restricted a day matches if either matches.
	domAny, dowAny bool
}

type field struct {
	name     string
	min, max int
	names    []string // names[i] is the value min+i
}

var fields = [5]field{
	{name: "minute", min: 0, max: 59},
	{name: "hour", min: 0, max: 23},
	{name: "day-of-month", min: 1, max: 31},
	{name: "month", min: 1, max: 12, names: []string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}},
	// 7 is Sunday too, as in most crons.
	{name: "day-of-week", min: 0, max: 7, names: []string{"sun", "mon", "tue", "wed", "thu", "fri", "sat"}},
}

// maxExpression bounds what Parse reads; a real expression is a few dozen bytes.
const maxExpression = 256

// Parse reads a five-field cron expression. Each field is "*", a value, a range "a-b", a
// step "*/n", "a-b/n" or "a/n" (a to the field's end), or a comma list of those; months and
// days of the week also take three-letter English names (jan, mon), any case.
func Parse(expr string) (Cron, error) {
	var c Cron
	if len(expr) > maxExpression {
		return c, fmt.Errorf("is longer than %d characters", maxExpression)
	}

	parts := strings.Fields(expr)
	if len(parts) != 5 {
		return c, fmt.Errorf("%q has %d fields, want 5: minute hour day-of-month month day-of-week (for example \"0 8 * * 1-5\")", expr, len(parts))
	}

	bits := [5]uint64{}
	for i, part := range parts {
		b, any, err := parseField(part, fields[i])
		if err != nil {
			return c, fmt.Errorf("%s field %q: %w", fields[i].name, part, err)
		}

		bits[i] = b
		switch i {
		case 2:
			c.domAny = any
		case 4:
			c.dowAny = any
		}
	}

	// Sunday is 0 and 7: fold 7 onto 0.
	if bits[4]&(1<<7) != 0 {
		bits[4] = bits[4]&^(1<<7) | 1
	}

	c.minute, c.hour, c.dom, c.month, c.dow = bits[0], bits[1], bits[2], bits[3], bits[4]
	return c, nil
}

func parseField(s string, f field) (uint64, bool, error) {
	var bits uint64
	all := true
	for _, item := range strings.Split(s, ",") {
		if item == "" {
			return 0, false, fmt.Errorf("has an empty list item")
		}

		rng, stepText, hasStep := strings.Cut(item, "/")
		step := 1
		if hasStep {
			n, err := strconv.Atoi(stepText)
			if err != nil || n < 1 || n > f.max {
				return 0, false, fmt.Errorf("step %q must be a number from 1 to %d", stepText, f.max)
			}

			step = n
		}

		lo, hi := f.min, f.max
		star := rng == "*"
		if !star {
			a, b, isRange := strings.Cut(rng, "-")
			var err error
			lo, err = value(a, f)
			if err != nil {
				return 0, false, err
			}

			hi = lo
			if isRange {
				hi, err = value(b, f)
				if err != nil {
					return 0, false, err
				}

				if hi < lo {
					return 0, false, fmt.Errorf("range %s goes backwards: write the smaller value first", rng)
				}
			} else if hasStep {
				// "a/n": from a to the field's end.
				hi = f.max
			}
		}

		if !star || step != 1 {
			all = false
		}

		for v := lo; v <= hi; v += step {
			bits |= 1 << uint(v)
		}
	}

	return bits, all, nil
}

func value(s string, f field) (int, error) {
	for i, name := range f.names {
		if strings.EqualFold(s, name) {
			return f.min + i, nil
		}
	}

	n, err := strconv.Atoi(s)
	if err != nil || n < f.min || n > f.max {
		if f.names != nil {
			return 0, fmt.Errorf("%q must be a number from %d to %d or a name (%s)", s, f.min, f.max, strings.Join(f.names, ", "))
		}

		return 0, fmt.Errorf("%q must be a number from %d to %d", s, f.min, f.max)
	}

	return n, nil
}

// matchDay reports whether a calendar day matches the day fields and the month.
func (c Cron) matchDay(month int, day int, weekday int) bool {
	if c.month&(1<<uint(month)) == 0 {
		return false
	}

	dom := c.dom&(1<<uint(day)) != 0
	dow := c.dow&(1<<uint(weekday)) != 0
	switch {
	case c.domAny && c.dowAny:
		return true
	case c.domAny:
		return dow
	case c.dowAny:
		return dom
	default:
		return dom || dow
	}
}

// times lists the matching (hour, minute) pairs of a day in ascending order.
func (c Cron) times() [][2]int {
	var out [][2]int
	for h := 0; h < 24; h++ {
		if c.hour&(1<<uint(h)) == 0 {
			continue
		}

		for m := 0; m < 60; m++ {
			if c.minute&(1<<uint(m)) != 0 {
				out = append(out, [2]int{h, m})
			}
		}
	}

	return out
}
