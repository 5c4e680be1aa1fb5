package shapes

import (
	"fmt"
	"sort"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Rollout is a shape's rollout settings resolved against a size.
type Rollout struct {
	Strategy         string
	Surge            int
	Unavailable      int
	MinReady         time.Duration
	ProgressDeadline time.Duration
	Canary           int
	AutoRevert       bool
}

// ResolveRollout applies the defaults and turns percentages into counts the way Kubernetes
// does: a surge percentage rounds up, an unavailable one down, and when both come to 0 one
// instance may be unavailable, so that a rollout can always move.
func ResolveRollout(r api.DeploymentShapeRollout, size int) (Rollout, error) {
	err := validate.Rollout(r)
	if err != nil {
		return Rollout{}, err
	}

	out := Rollout{Strategy: r.Strategy, AutoRevert: r.AutoRevert, Canary: 1}
	if out.Strategy == "" {
		out.Strategy = api.RolloutRolling
	}

	count := func(field string, c api.RolloutCount, def string, roundUp bool) int {
		if c == "" {
			c = api.RolloutCount(def)
		}

		n, percent, _ := validate.RolloutCount(field, c)
		if !percent {
			return n
		}

		if roundUp {
			return (size*n + 99) / 100
		}

		return size * n / 100
	}

	out.Surge = count("max_surge", r.MaxSurge, validate.DefaultMaxSurge, true)
	out.Unavailable = count("max_unavailable", r.MaxUnavailable, validate.DefaultMaxUnavailable, false)
	if out.Surge == 0 && out.Unavailable == 0 {
		out.Unavailable = 1
	}

	out.MinReady, _ = validate.RolloutDuration("min_ready", r.MinReady, 0)
	out.ProgressDeadline, _ = validate.RolloutDuration("progress_deadline", r.ProgressDeadline, validate.DefaultProgressDeadline)
	if r.Canary != nil && r.Canary.Count > 0 {
		out.Canary = r.Canary.Count
	}

	return out, nil
}

// RolloutInstance is what a rollout plan needs to know of one instance.
type RolloutInstance struct {
	Name     string
	Revision int

	// InFlux is true while the instance is being created or deleted.
	Creating bool

	// Ready is true when it counts as ready (shapes.ReadyFor).
	Ready bool

	// Location is the LXD cluster member it runs on (empty outside a cluster): removals
	// take from the fullest member first, so a rollout keeps the shape's spread.
	Location string

	// RunningSince is when it last started, as far as we know (RunningSince).
	RunningSince time.Time
}

// RolloutState is the input of a plan: the settings, the bounds, and the instances that
// count toward the size (being created or created; not deleting, not missing).
type RolloutState struct {
	Settings  Rollout
	Size      int
	Minimum   int
	Maximum   int
	Target    int
	Promoted  bool
	Instances []RolloutInstance

	// Deleting counts instances on their way out that LXD may still hold (being deleted or
	// replaced): a rollout is complete once they are gone, and they count against
	// max_surge and the maximum until then (Held), as in the fleet's bound check.
	Deleting int
}

// RolloutPlan is what one step of a rollout does.
type RolloutPlan struct {
	// Launch new instances at the target revision, and Remove these outdated ones.
	Launch int
	Remove []string

	// Complete: nothing outdated is left and every new instance is ready. WaitPromote: a
	// canary rollout replaced its canaries and waits for promote or abort.
	Complete    bool
	WaitPromote bool

	// Refuse says why the rollout cannot move at all with these bounds and settings.
	Refuse string

	Phase                    string
	Updated, Ready, Outdated int
}

// PlanRollout decides one step of a rollout from the instances alone, so that a daemon
// that crashed mid-rollout (or another member) picks it up where it is. Every launch and
// delete it asks for still goes through the fleet's bound check.
func PlanRollout(s RolloutState) RolloutPlan {
	var p RolloutPlan
	size := rules.Clamp(s.Size, s.Minimum, s.Maximum)
	fresh, outdated := SplitRollout(s.Instances, s.Target)
	creating := false
	for _, i := range s.Instances {
		creating = creating || i.Creating
	}

	p.Updated, p.Ready, p.Outdated = CountRollout(s.Instances, s.Target)
	total := len(s.Instances)
	canary := s.Settings.Strategy == api.RolloutCanary && !s.Promoted
	want := size
	if canary {
		want = min(s.Settings.Canary, size)
	}

	switch {
	case len(outdated) == 0 && p.Ready == len(fresh) && !creating && s.Deleting == 0:
		p.Complete, p.Phase = true, "done"
		return p
	case canary && p.Ready >= want && len(fresh) >= want && total <= size && !creating:
		p.WaitPromote, p.Phase = true, "wait-promote"
		return p
	}

	// Unready outdated instances go first: removing them costs no availability. One still
	// being created cannot be deleted yet (the fleet would refuse it).
	var removable []RolloutInstance
	for _, i := range outdated {
		if !i.Creating {
			removable = append(removable, i)
		}
	}

	sort.SliceStable(removable, func(a, b int) bool { return !removable[a].Ready && removable[b].Ready })
	remove := func(n int) {
		for _, i := range fullestFirst(removable, s.Instances, max(0, min(n, len(removable)))) {
			p.Remove = append(p.Remove, i.Name)
		}
	}

	if s.Settings.Strategy == api.RolloutRecreate {
		if len(outdated) > 0 && size-s.Minimum <= 0 {
			p.Refuse = fmt.Sprintf("the recreate strategy deletes instances before replacing them, but the shape keeps %d instances and its scaling_minimum is %d: lower scaling_minimum or use the rolling strategy", size, s.Minimum)
			return p
		}

		p.Phase = "recreate"
		switch {
		case creating:
		case total < size:
			p.Launch = min(max(0, size-total), rules.Room(s.Maximum, total, s.Deleting))
		case len(fresh) > p.Ready:
		default:
			remove(min(len(outdated), total-s.Minimum))
		}

		return p
	}

	maxTotal := min(size+s.Settings.Surge, s.Maximum)
	if len(outdated) > 0 && maxTotal <= size && (s.Settings.Unavailable == 0 || size-1 < s.Minimum) {
		if s.Settings.Unavailable == 0 {
			p.Refuse = fmt.Sprintf("the shape keeps %d instances and scaling_maximum %d leaves no room for a surge instance, while rollout.max_unavailable is 0: raise scaling_maximum, or set rollout.max_unavailable to 1 or more", size, s.Maximum)
		} else {
			p.Refuse = fmt.Sprintf("the shape keeps %d instances, at both scaling_minimum and scaling_maximum: raise scaling_maximum to leave room for a surge, or lower scaling_minimum", size)
		}

		return p
	}

	p.Phase = "replace"
	if canary {
		p.Phase = "canary"
	}

	// Instances still being deleted take their room until LXD has deleted them: the surge
	// waits for them rather than let LXD hold more than maxTotal.
	p.Launch = min(rules.Room(maxTotal, total, s.Deleting), max(0, want-len(fresh)))

	// Removals keep size - max_unavailable ready. What is not ready holds no availability: a
	// fresh instance not ready yet, and an outdated one still being created (the template
	// moved on during the rollout, after its launch began); removing a ready instance on
	// their account would go below it. An unready outdated instance not being created is
	// removable (first) and costs none.
	n := total - (size - s.Settings.Unavailable) - (len(fresh) - p.Ready) - (len(outdated) - len(removable))
	if canary {
		n = min(n, len(outdated)-(size-want))
	}

	remove(min(n, total-s.Minimum))
	return p
}

// SplitRollout parts the instances a rollout counts into the fresh ones, at its target
// revision, and the outdated ones it replaces (rules.Outdated): the one count of a
// rollout, which its steps plan from (PlanRollout) and its API shows.
func SplitRollout(instances []RolloutInstance, target int) (fresh []RolloutInstance, outdated []RolloutInstance) {
	for _, i := range instances {
		if rules.Outdated(i.Revision, target) {
			outdated = append(outdated, i)
		} else {
			fresh = append(fresh, i)
		}
	}

	return fresh, outdated
}

// CountRollout counts the instances a rollout counts: those at its target revision
// (updated), the ready ones among them, and the outdated ones (SplitRollout).
func CountRollout(instances []RolloutInstance, target int) (updated int, ready int, outdated int) {
	fresh, old := SplitRollout(instances, target)
	return len(fresh), countReady(fresh), len(old)
}

// countReady counts the ready instances.
func countReady(instances []RolloutInstance) int {
	n := 0
	for _, i := range instances {
		if i.Ready {
			n++
		}
	}

	return n
}

// fullestFirst takes n of the removable instances (given unready first), each from the LXD
// member holding the most of the shape's instances at that point (doc/placement.md): the
// new instances went to the emptiest members, so the spread holds through a rollout.
// Unready ones still go first; outside a cluster every location is empty and the order is
// kept.
func fullestFirst(removable []RolloutInstance, all []RolloutInstance, n int) []RolloutInstance {
	counts := map[string]int{}
	for _, i := range all {
		counts[i.Location]++
	}

	taken := make([]bool, len(removable))
	out := make([]RolloutInstance, 0, n)
	for len(out) < n {
		best := -1
		for k, i := range removable {
			if taken[k] {
				continue
			}

			switch {
			case best < 0:
				best = k
			case removable[best].Ready && !i.Ready:
				best = k
			case removable[best].Ready == i.Ready && counts[i.Location] > counts[removable[best].Location]:
				best = k
			}
		}

		if best < 0 {
			break
		}

		taken[best] = true
		counts[removable[best].Location]--
		out = append(out, removable[best])
	}

	return out
}
