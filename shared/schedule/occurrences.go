package schedule

import (
	"time"
	// Embedded zone data: the daemon, the CLI and a governor's static binary in a bare
	// container then know the same IANA zones even without a system tzdata.
	_ "time/tzdata"
)

// Daylight-saving rules (doc/governors.md, "Scheduled actions"), as Vixie cron and AWS
// scheduled actions do:
//   - a local time that does not exist (02:30 on a day the clocks go from 02:00 to 03:00)
//     fires at the first instant after the gap, the transition itself (03:00 new time);
//     several such times of one gap fire once, there;
//   - a local time that happens twice (02:30 on a day the clocks go from 03:00 back to
//     02:00) fires once, at its first occurrence.
// So every local time an expression names maps to exactly one instant, and the mapping
// never goes backwards as local time moves forward.

// searchDays bounds the search for an occurrence: eight years and a day cover any
// expression that ever fires (29 February in a leap year, with 2100 not one).
const searchDays = 8*366 + 1

// Next returns the first occurrence strictly after after, in loc; ok is false when the
// expression never fires (30 February).
func (c Cron) Next(after time.Time, loc *time.Location) (time.Time, bool) {
	local := after.In(loc)
	times := c.times()
	day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC)
	for i := 0; i < searchDays; i++ {
		d := day.AddDate(0, 0, i)
		if !c.matchDay(int(d.Month()), d.Day(), int(d.Weekday())) {
			continue
		}

		for _, hm := range times {
			if i == 0 && (hm[0] < local.Hour() || hm[0] == local.Hour() && hm[1] < local.Minute()) {
				continue
			}

			at := Resolve(d.Year(), d.Month(), d.Day(), hm[0], hm[1], loc)
			if at.After(after) {
				return at, true
			}
		}
	}

	return time.Time{}, false
}

// Latest returns the last occurrence in (after, until], in loc; ok is false when there is
// none. It searches backwards from until, so a daemon down for months finds the action it
// missed last without walking every occurrence since.
func (c Cron) Latest(after time.Time, until time.Time, loc *time.Location) (time.Time, bool) {
	if !until.After(after) {
		return time.Time{}, false
	}

	local := until.In(loc)
	times := c.times()
	// From the day after: a local time later than until's may map to an instant before it
	// (the first pass of a repeated hour, seen from the second).
	day := time.Date(local.Year(), local.Month(), local.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, 1)
	from := after.In(loc)
	afterDay := time.Date(from.Year(), from.Month(), from.Day(), 0, 0, 0, 0, time.UTC)
	for i := 0; i < searchDays; i++ {
		d := day.AddDate(0, 0, -i)
		// Local times before after's day map to instants no later than after.
		if d.Before(afterDay) {
			break
		}

		if !c.matchDay(int(d.Month()), d.Day(), int(d.Weekday())) {
			continue
		}

		for j := len(times) - 1; j >= 0; j-- {
			at := Resolve(d.Year(), d.Month(), d.Day(), times[j][0], times[j][1], loc)
			if at.After(until) {
				continue
			}

			if !at.After(after) {
				return time.Time{}, false
			}

			return at, true
		}
	}

	return time.Time{}, false
}

// Resolve returns the instant a local wall-clock time of loc names, by the rules above: the
// earlier of two (a repeated hour), or the end of the gap when there is none.
func Resolve(year int, month time.Month, day int, hour int, minute int, loc *time.Location) time.Time {
	wall := time.Date(year, month, day, hour, minute, 0, 0, time.UTC)

	// The offsets in force around that day: a zone changes offset at most a few times a year.
	var candidates []time.Time
	for _, probe := range []time.Duration{-36 * time.Hour, 0, 36 * time.Hour} {
		_, offset := wall.Add(probe).In(loc).Zone()
		at := wall.Add(-time.Duration(offset) * time.Second)
		if wallOf(at, loc).Equal(wall) {
			candidates = append(candidates, at)
		}
	}

	var best time.Time
	for _, at := range candidates {
		if best.IsZero() || at.Before(best) {
			best = at
		}
	}

	if !best.IsZero() {
		return best
	}

	// A gap: the transition after which local time is past wall.
	for _, probe := range []time.Duration{-36 * time.Hour, 0, 36 * time.Hour} {
		_, offset := wall.Add(probe).In(loc).Zone()
		at := wall.Add(-time.Duration(offset) * time.Second)
		start, end := at.In(loc).ZoneBounds()
		for _, t := range []time.Time{start, end} {
			if t.IsZero() {
				continue
			}

			if wallOf(t.Add(-time.Nanosecond), loc).Before(wall) && wallOf(t, loc).After(wall) && (best.IsZero() || t.Before(best)) {
				best = t
			}
		}
	}

	if best.IsZero() {
		// Not reached with real zone data; the nearest reading keeps the order of times.
		return time.Date(year, month, day, hour, minute, 0, 0, loc)
	}

	return best
}

// wallOf is the local wall-clock reading of t in loc, as a UTC time for comparisons.
func wallOf(t time.Time, loc *time.Location) time.Time {
	l := t.In(loc)
	return time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), l.Second(), l.Nanosecond(), time.UTC)
}
