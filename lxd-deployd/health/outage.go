package health

import (
	"fmt"
	"sync/atomic"
	"time"
)

// outage remembers when the checker last saw LXD unavailable (or began): a ttl report
// that did not arrive in a window that holds such a moment says nothing of the instance
// (it may have reported to an LXD, a proxy device or a daemon that was not there).
type outage struct {
	at atomic.Int64 // unix nanoseconds
}

// saw records an outage now.
func (o *outage) saw(now time.Time) {
	o.at.Store(now.UnixNano())
}

// within says whether an outage was seen in the window before now, and how long ago.
func (o *outage) within(now time.Time, window time.Duration) (time.Duration, bool) {
	ago := now.Sub(time.Unix(0, o.at.Load()))
	return ago, ago < window
}

// sawOutage records that LXD did not answer a check.
func (c *Checker) sawOutage() {
	c.outage.saw(time.Now())
}

// expiry is a ttl check's result for an instance that sent no report within the ttl: a
// failed check, or no verdict when LXD was unavailable (or the checker began) within
// that ttl.
func (c *Checker) expiry(t target, now time.Time) Result {
	ago, recent := c.outage.within(now, t.settings.TTL)
	if recent {
		return Result{At: now, ExitCode: -1, Expiry: true, NoVerdict: true, Output: fmt.Sprintf("no report within the ttl (%s), but LXD was unavailable or the checker began %s ago: no verdict until a whole ttl without either", t.settings.TTL, ago.Round(time.Second))}
	}

	return Result{At: now, ExitCode: -1, Expiry: true, Output: fmt.Sprintf("no report within the ttl (%s)", t.settings.TTL)}
}
