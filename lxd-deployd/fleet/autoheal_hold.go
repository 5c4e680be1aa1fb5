package fleet

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Holds: autohealing must first do no harm. When many instances fail at once, a fault
// they share (LXD restarting or slow, the network, a dependency, a broken check) is far
// likelier than that many broken instances, and replacing them all would only add load to
// the fault and lose what the instances held, as Envoy's panic threshold, AWS's fail-open
// target groups and Kubernetes' zone-wide eviction limits learnt. So autohealing holds:
//   - for a shape, while more than health.hold_share of its instances (and at least 2) are
//     unhealthy, failing their latest checks, or missing;
//   - for a shape, while its check is broken (it starts on no instance), and for an
//     instance whose check could not start, until the check has started somewhere;
//   - for an LXD member, while every instance on it (2 or more) is unhealthy;
//   - for a shape, once health.replacement_limit replacements started within
//     health.replacement_window.
// Holds are decided afresh every round, so each lifts by itself when its cause goes.

// HealHolds is what one round holds back.
type HealHolds struct {
	// Shapes says why autohealing holds for a shape, by shape id.
	Shapes map[int64]string

	// Members says why autohealing holds for the unhealthy instances on an LXD member.
	Members map[string]string

	// Waiting are instances whose check could not start, held until the shape's check is
	// known to start somewhere, with why.
	Waiting map[int64]string
}

// PlanHolds decides the round's holds from the shapes, their instances' health per LXD
// member (db.GetHealthByLocation), the candidate rows PlanHealing sees, and when each
// shape's recent replacements started.
func PlanHolds(shapes []db.Shape, counts map[int64]map[string]db.LocationHealth, rows []db.Instance, started map[int64][]time.Time, now time.Time) HealHolds {
	holds := HealHolds{Shapes: map[int64]string{}, Members: map[string]string{}, Waiting: map[int64]string{}}
	missing := map[int64]int{}
	for _, row := range rows {
		if row.State == db.InstanceMissing {
			missing[row.ShapeID]++
		}
	}

	members := map[string]db.LocationHealth{}
	for _, s := range healingShapes(shapes) {
		settings, ok := health.Parse(s.Health)
		if !ok || !settings.Replace {
			continue
		}

		failing, total := missing[s.ID], missing[s.ID]
		for location, h := range counts[s.ID] {
			failing += h.Unhealthy + h.Failing
			total += h.Created
			if location != "" {
				m := members[location]
				m.Created += h.Created
				m.Unhealthy += h.Unhealthy
				members[location] = m
			}
		}

		recent := recentStarts(started[s.ID], now, settings.ReplacementWindow)
		switch {
		case s.HealthCheck == api.HealthCheckBroken:
			holds.Shapes[s.ID] = "the health check is broken: " + s.HealthCheckReason
		case failing >= 2 && float64(failing) > settings.HoldShare*float64(total):
			holds.Shapes[s.ID] = fmt.Sprintf("%d of %d instances are unhealthy, failing their checks or missing, more than health.hold_share (%g): a fault they share (LXD, the network, a dependency, the check) is likelier than %d broken instances, so none is replaced; the hold lifts by itself when no more than that share are (health.hold_share 1 never holds)", failing, total, settings.HoldShare, failing)
		case recent >= settings.ReplacementLimit:
			holds.Shapes[s.ID] = fmt.Sprintf("%d replacements started in the last %s (health.replacement_limit %d): the next waits until the window has room", recent, settings.ReplacementWindow, settings.ReplacementLimit)
		}
	}

	for name, m := range members {
		if m.Created >= 2 && m.Unhealthy == m.Created {
			holds.Members[name] = fmt.Sprintf("every instance on LXD member %s (%d) is unhealthy: a fault of the member is likelier than %d broken instances, so none of them is replaced until some are healthy again", name, m.Created, m.Created)
		}
	}

	byID := map[int64]db.Shape{}
	for _, s := range shapes {
		byID[s.ID] = s
	}

	for _, row := range rows {
		s := byID[row.ShapeID]
		if row.State == db.InstanceCreated && row.Health.Status == api.HealthUnhealthy && row.Health.CannotStart && s.HealthCheck != api.HealthCheckOK {
			holds.Waiting[row.ID] = fmt.Sprintf("the check of %s could not start, and has not started on any instance since it last changed: a broken check is told from a broken instance once every instance was checked", row.Name)
		}
	}

	return holds
}

// recentStarts counts the starts within window before now.
func recentStarts(starts []time.Time, now time.Time, window time.Duration) int {
	n := 0
	for _, at := range starts {
		if now.Sub(at) < window {
			n++
		}
	}

	return n
}

// Held says why a step is held back, or "" when it may go. A crash's unfinished
// replacement is always finished, and an instance on a lost member is always replaced
// (doc/placement.md): holds weigh verdicts, which neither is.
func (h HealHolds) Held(step HealStep) string {
	row := step.Row
	if step.Finish || step.Unreachable || (row.State != db.InstanceMissing && row.Health.Status != api.HealthUnhealthy) {
		return ""
	}

	if reason := h.Shapes[row.ShapeID]; reason != "" {
		return reason
	}

	if reason := h.Members[row.Location]; reason != "" && row.Location != "" && row.State == db.InstanceCreated {
		return reason
	}

	return h.Waiting[row.ID]
}

// ShapeReason is why autohealing holds for a shape as its health_status says: the shape's
// own hold, else the holds of some of its instances.
func (h HealHolds) ShapeReason(shapeID int64, steps []HealStep) string {
	if reason := h.Shapes[shapeID]; reason != "" {
		return reason
	}

	var reasons []string
	seen := map[string]bool{}
	for _, step := range steps {
		if step.Shape.ID != shapeID {
			continue
		}

		reason := h.Held(step)
		if reason != "" && !seen[reason] {
			seen[reason] = true
			reasons = append(reasons, reason)
		}
	}

	sort.Strings(reasons)
	return strings.Join(reasons, "; ")
}

// healSettings is a shape's health settings, if it has checks.
func healSettings(s db.Shape) (health.Settings, bool) {
	return health.Parse(s.Health)
}
