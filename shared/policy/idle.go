package policy

import (
	"fmt"
	"time"
)

// idle is scale to zero (IdleToZero): a shape whose front door has had no request, open
// connection nor queued request since IdleToZero goes to zero instances, when its minimum
// allows. ok is false when the rule has nothing to say (off, no front door figures, busy,
// not idle long enough): the other rules decide. Any traffic, and any scale request (a
// wake from the front door is one), starts the idle time again.
func (s *State) idle(now time.Time, in Input) (Decision, bool) {
	if s.Policy.IdleToZero <= 0 || in.Traffic == nil {
		return Decision{}, false
	}

	t := in.Traffic
	if t.RequestRate > 0 || t.Sessions > 0 || t.Queue > 0 || s.lastBusy.IsZero() {
		s.lastBusy = now
		return Decision{}, false
	}

	idleFor := now.Sub(s.lastBusy)
	switch {
	case in.Current == 0:
		return hold(in, fmt.Sprintf("at zero, idle for %s: the front door wakes the shape at its next request", idleFor.Round(time.Second))), true
	case in.Minimum > 0 || idleFor < s.Policy.IdleToZero:
		return Decision{}, false
	}

	// The idle time is the only signal here: stabilization and cooldowns are about target
	// tracking, and idle_to_zero is already the wait.
	s.recommendations = nil
	return Decision{Current: in.Current, Desired: 0, Recommended: 0,
		Why: fmt.Sprintf("idle to zero: no request through the front door for %s (idle_to_zero %s)", idleFor.Round(time.Second), s.Policy.IdleToZero)}, true
}
