package schedule

import (
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Location returns an action's time zone: UTC when empty, else the IANA zone.
func Location(a api.DeploymentShapeScheduledAction) (*time.Location, error) {
	if a.TimeZone == "" {
		return time.UTC, nil
	}

	// LoadLocation also takes "Local" and file paths relative to ZONEINFO; only IANA
	// names make sense in a shape that every member reads alike.
	if a.TimeZone == "Local" {
		return nil, fmt.Errorf("%q is not an IANA time zone name (such as Europe/Paris or UTC)", a.TimeZone)
	}

	loc, err := time.LoadLocation(a.TimeZone)
	if err != nil {
		return nil, fmt.Errorf("%q is not a known IANA time zone (such as Europe/Paris or UTC)", a.TimeZone)
	}

	return loc, nil
}

// parsed is an action ready to compute with.
type parsed struct {
	cron Cron
	loc  *time.Location
}

func parse(a api.DeploymentShapeScheduledAction) (parsed, error) {
	c, err := Parse(a.Cron)
	if err != nil {
		return parsed{}, err
	}

	loc, err := Location(a)
	if err != nil {
		return parsed{}, err
	}

	return parsed{cron: c, loc: loc}, nil
}

// Due returns the action to apply for the occurrences in (after, until]: the one whose
// latest occurrence in that window is the latest (a later action in the list wins a tie),
// and that occurrence. Only the latest applies, once: a daemon that was down applies the
// last action it missed when it starts, and not the ones before, which it would undo. ok
// is false when nothing is due. Actions that do not parse are skipped (validation refuses
// them before they are stored).
func Due(actions []api.DeploymentShapeScheduledAction, after time.Time, until time.Time) (index int, at time.Time, ok bool) {
	index = -1
	for i, a := range actions {
		p, err := parse(a)
		if err != nil {
			continue
		}

		t, found := p.cron.Latest(after, until, p.loc)
		if found && (index < 0 || !t.Before(at)) {
			index, at = i, t
		}
	}

	return index, at, index >= 0
}

// Upcoming returns an action's next n occurrences after now (fewer if it stops firing).
func Upcoming(a api.DeploymentShapeScheduledAction, now time.Time, n int) ([]time.Time, error) {
	p, err := parse(a)
	if err != nil {
		return nil, err
	}

	out := []time.Time{}
	at := now
	for len(out) < n {
		next, ok := p.cron.Next(at, p.loc)
		if !ok {
			break
		}

		out = append(out, next.In(p.loc))
		at = next
	}

	return out, nil
}
