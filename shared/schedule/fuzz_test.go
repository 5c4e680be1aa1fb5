package schedule

import (
	"testing"
	"time"
)

// FuzzCron: any text parses or is refused without panicking, and an expression that
// parses has occurrences that Next and Latest agree on, in a zone with DST changes.
func FuzzCron(f *testing.F) {
	for _, seed := range []string{"0 8 * * 1-5", "*/15 2 * * *", "30 2 29 3 *", "0 0 31 2 *", "5/20 9-17/4 1,15 jan-mar mon", "* * * * 7"} {
		f.Add(seed, int64(0))
	}

	loc, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		f.Fatal(err)
	}

	f.Fuzz(func(t *testing.T, expr string, offset int64) {
		c, err := Parse(expr)
		if err != nil {
			return
		}

		at := date(2026, 3, 20, 0, 0).Add(time.Duration(offset%(400*24*3600)) * time.Second)
		next, ok := c.Next(at, loc)
		if !ok {
			return
		}

		if !next.After(at) {
			t.Fatalf("%q: next %s is not after %s", expr, next, at)
		}

		latest, ok := c.Latest(at, next, loc)
		if !ok || !latest.Equal(next) {
			t.Fatalf("%q: latest in (%s, %s] is %s (%v)", expr, at, next, latest, ok)
		}
	})
}
