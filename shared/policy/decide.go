package policy

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// Kind says what an input is about.
type Kind string

// Input kinds, named after the webhook events they come from.
const (
	Metrics      Kind = api.WebhookMetrics
	ScaleRequest Kind = api.WebhookScaleRequest
)

// Input is what a decision is made from: the shape's size and bounds, and either a scale
// request, CPU metrics or the value of the shape's query.
type Input struct {
	Kind Kind

	// Current is the shape's scaling_current; Minimum and Maximum its bounds.
	Current int
	Minimum int
	Maximum int

	// Target, RequestedBy and Reason are those of a scale request.
	Target      int
	RequestedBy string
	Reason      string

	// CPURates are the cpu_rate (cores) of the shape's Running instances that reported one.
	CPURates []float64

	// Value is what the shape's query returned (kind Query).
	Value float64

	// Traffic is what the shape's front door measured (kind Metrics; nil without one).
	Traffic *api.WebhookTrafficMetrics
}

// MetricsInput turns the metrics of one shape into an input: sizes and bounds as the
// event reports them, and the cpu_rate of each Running instance that has one.
func MetricsInput(m api.WebhookShapeMetrics) Input {
	in := Input{Kind: Metrics, Current: m.ScalingCurrent, Minimum: m.ScalingMinimum, Maximum: m.ScalingMaximum, Traffic: m.Traffic}

	// Sorted by instance name so that the sum, and so the decision, does not depend on map order.
	names := make([]string, 0, len(m.Instances))
	for name := range m.Instances {
		names = append(names, name)
	}

	sort.Strings(names)
	for _, name := range names {
		instance := m.Instances[name]
		if instance.Status != "Running" || instance.CPURate == nil {
			continue
		}

		rate := *instance.CPURate
		if math.IsNaN(rate) || math.IsInf(rate, 0) || rate < 0 {
			continue
		}

		in.CPURates = append(in.CPURates, rate)
	}

	return in
}

// ScaleRequestInput turns a scale request into an input; the size and bounds come from the
// shape as the governor API reports it (the event carries neither).
func ScaleRequestInput(r api.WebhookScaleRequestMetadata, current int, minimum int, maximum int) Input {
	return Input{Kind: ScaleRequest, Current: current, Minimum: minimum, Maximum: maximum, Target: r.Target, RequestedBy: r.RequestedBy, Reason: r.Reason}
}

// Decision is the size a shape should have, and why.
type Decision struct {
	// Current is the size the decision was made at.
	Current int

	// Desired is the size to bring the shape to now; Current when nothing is to be done.
	Desired int

	// Recommended is what the rules asked for before cooldowns; it differs from Desired
	// only while a cooldown holds a change back.
	Recommended int

	// Why explains the decision in words, for the log.
	Why string
}

// Action names what a decision does.
type Action string

// Actions.
const (
	None      Action = "none"
	ScaleUp   Action = "scale-up"
	ScaleDown Action = "scale-down"
)

// Action returns what the decision does.
func (d Decision) Action() Action {
	switch {
	case d.Desired > d.Current:
		return ScaleUp
	case d.Desired < d.Current:
		return ScaleDown
	}

	return None
}

// Delta is the number of instances to launch (positive) or delete (negative).
func (d Decision) Delta() int {
	return d.Desired - d.Current
}

// epsilon absorbs floating point noise: 0.55/0.5 is 1.1000000000000001, which must count as
// on the 10% tolerance edge, and 3×(0.6/0.4) must not ceil to 5.
const epsilon = 1e-9

type recommendation struct {
	at       time.Time
	replicas int
}

// State is what the policy remembers of one shape between decisions: when it was last
// scaled and the recent recommendations. It is not safe for concurrent use; a governor
// decides for each shape from one goroutine.
type State struct {
	Policy Shape

	lastScale       time.Time
	recommendations []recommendation

	// lastBusy is when the shape last had traffic or was asked to scale (idle.go).
	lastBusy time.Time
}

// NewState returns the state of a shape governed by p.
func NewState(p Shape) *State {
	return &State{Policy: p}
}

// Scaled records that the shape was scaled at now: the cooldowns count from there. Call it
// after a scaling action that changed something, not for a dry run or a refused one.
func (s *State) Scaled(now time.Time) {
	s.lastScale = now
}

// LastScale returns when the shape was last scaled (zero: never).
func (s *State) LastScale() time.Time {
	return s.lastScale
}

// Decide returns the size the shape should have now.
func (s *State) Decide(now time.Time, in Input) Decision {
	switch in.Kind {
	case ScaleRequest:
		s.lastBusy = now
		return s.scaleRequest(now, in)
	case Metrics:
		if d, ok := s.idle(now, in); ok {
			return d
		}

		if s.Policy.RequestsPerInstance > 0 {
			return s.requests(now, in)
		}

		return s.metrics(now, in)
	case Query:
		return s.query(now, in)
	}

	return hold(in, fmt.Sprintf("unknown input kind %q", in.Kind))
}

// hold is a decision to change nothing.
func hold(in Input, why string) Decision {
	return Decision{Current: in.Current, Desired: in.Current, Recommended: in.Current, Why: why}
}

// scaleRequest follows an admin's request: the target within the bounds, whatever the
// cooldowns and recent recommendations say.
func (s *State) scaleRequest(now time.Time, in Input) Decision {
	who := in.RequestedBy
	if who == "" {
		who = "unknown"
	}

	why := fmt.Sprintf("scale-request from %s: target %d", who, in.Target)
	if in.Reason != "" {
		why += fmt.Sprintf(" (%q)", in.Reason)
	}

	if !s.Policy.FollowScaleRequests {
		return hold(in, why+"; ignored: follow_scale_requests is false")
	}

	desired, note := clamp(in.Target, in.Minimum, in.Maximum)
	why += note

	// The admin's size replaces the history: otherwise the stabilization window would hold
	// (or bring back) the size from before the request at the next metrics.
	s.recommendations = nil
	if s.Policy.ScaleDownStabilization > 0 {
		s.recommendations = []recommendation{{at: now, replicas: desired}}
	}

	return Decision{Current: in.Current, Desired: desired, Recommended: desired, Why: why}
}

// metrics is target tracking on CPU, as HPA does it:
//
//	desired = ceil(current × observed / target)
//
// with observed the mean cpu_rate of the Running instances that reported one. Inside the
// tolerance nothing changes. When some counted instances did not report (just launched,
// stopped), the ratio is taken again assuming them idle for a scale up and at the target
// for a scale down, as HPA does with missing pods, so that a launch is not counted twice
// while the new instances have no rate yet. Then the scale-down stabilization window, the
// bounds and the cooldowns apply, in that order.
func (s *State) metrics(now time.Time, in Input) Decision {
	target := s.Policy.CPUTarget
	if target <= 0 {
		return hold(in, "cpu target tracking is off for this shape")
	}

	if len(in.CPURates) == 0 {
		return hold(in, "no cpu data: no Running instance reported cpu_rate")
	}

	var sum float64
	for _, rate := range in.CPURates {
		sum += rate
	}

	reporting := len(in.CPURates)
	mean := sum / float64(reporting)
	ratio := mean / target
	why := fmt.Sprintf("cpu observed %.3g vs target %.3g", mean, target)

	missing := in.Current - reporting
	flipped := false
	if missing > 0 {
		why += fmt.Sprintf(" (%d of %d instances reporting)", reporting, in.Current)
		all := float64(in.Current) * target
		switch {
		case ratio > 1:
			ratio = sum / all
			flipped = ratio < 1
		case ratio < 1:
			ratio = (sum + float64(missing)*target) / all
		}
	}

	raw := in.Current
	switch {
	case flipped:
		why = "no change: " + why + ", not over target counting the silent instances as idle"
	case math.Abs(ratio-1) <= s.Policy.Tolerance+epsilon:
		why = "within tolerance: " + why
	default:
		raw = int(math.Ceil(float64(in.Current)*ratio - epsilon))
	}

	return s.settle(now, in, raw, why)
}

// settle turns the raw recommendation of a target tracking rule (CPU or a query) into the
// decision: the scale-down stabilization window, the bounds and the cooldowns apply, in
// that order, the same for every signal.
func (s *State) settle(now time.Time, in Input, raw int, why string) Decision {
	// Scale-down stabilization: never below the highest recommendation in the window (nor
	// above the current size: the window only slows scale downs).
	window := s.Policy.ScaleDownStabilization
	highest := raw
	kept := s.recommendations[:0]
	for _, r := range s.recommendations {
		if r.at.After(now.Add(-window)) {
			kept = append(kept, r)
			highest = max(highest, r.replicas)
		}
	}

	s.recommendations = kept
	if window > 0 {
		s.recommendations = append(s.recommendations, recommendation{at: now, replicas: raw})
	}

	stabilized := raw
	if raw < in.Current {
		stabilized = min(in.Current, highest)
		if stabilized > raw {
			why = fmt.Sprintf("stabilization: %s wants %d, highest recommendation in the last %s is %d", why, raw, window, highest)
		}
	}

	desired, note := clamp(stabilized, in.Minimum, in.Maximum)
	why += note

	// Cooldowns since the last scaling action, one per direction.
	since := now.Sub(s.lastScale)
	cooldown, direction, key := time.Duration(0), "", ""
	switch {
	case desired > in.Current:
		cooldown, direction, key = s.Policy.ScaleUpCooldown, "scale up", "scale_up_cooldown"
	case desired < in.Current:
		cooldown, direction, key = s.Policy.ScaleDownCooldown, "scale down", "scale_down_cooldown"
	}

	if !s.lastScale.IsZero() && cooldown > 0 && since < cooldown {
		d := hold(in, fmt.Sprintf("cooldown: %s to %d held, last scaling %s ago, %s %s; %s", direction, desired, since.Round(time.Second), key, cooldown, why))
		d.Recommended = desired
		return d
	}

	return Decision{Current: in.Current, Desired: desired, Recommended: desired, Why: why}
}

// clamp brings n within [minimum, maximum] (rules.Clamp) and says so when it changed
// anything.
func clamp(n int, minimum int, maximum int) (int, string) {
	clamped := rules.Clamp(n, minimum, maximum)
	switch {
	case clamped > n:
		return clamped, fmt.Sprintf("; raised to scaling_minimum %d", minimum)
	case clamped < n:
		return clamped, fmt.Sprintf("; lowered to scaling_maximum %d", maximum)
	}

	return n, ""
}

// BeingDeleted counts the instances on their way out (being deleted or replaced): they no
// longer count in scaling_current, but lxd-deployd counts them against scaling_maximum
// until LXD has deleted them, so a launch at the maximum is refused until they are gone.
func BeingDeleted(instances []api.DeploymentInstance) int {
	n := 0
	for _, instance := range instances {
		if rules.Going(instance.State) {
			n++
		}
	}

	return n
}

// ScaleDownOrder returns the names of up to n instances to delete: unhealthy ones first,
// then outdated ones (made from an older revision of the shape, so a rollout would replace
// them anyway), then newest first by created_at; on an LXD cluster each comes from the
// member holding the most of them, that order deciding within a member (spread.go), and
// unreachable ones last. Instances being deleted, replaced or
// missing from LXD are left out (none counts in scaling_current, so deleting them would not
// shrink the shape), and so are those already draining in terminating:wait.
func ScaleDownOrder(instances []api.DeploymentInstance, n int) []string {
	candidates := make([]api.DeploymentInstance, 0, len(instances))
	for _, instance := range instances {
		if rules.Counted(instance.State) && instance.Lifecycle != api.LifecycleTerminatingWait {
			candidates = append(candidates, instance)
		}
	}

	sort.SliceStable(candidates, func(i, j int) bool {
		a, b := candidates[i], candidates[j]
		aSick, bSick := a.Health == api.HealthUnhealthy, b.Health == api.HealthUnhealthy
		if aSick != bSick {
			return aSick
		}

		if a.Outdated != b.Outdated {
			return a.Outdated
		}

		if !a.CreatedAt.Equal(b.CreatedAt) {
			return a.CreatedAt.After(b.CreatedAt)
		}

		return a.Name > b.Name
	})

	n = max(0, min(n, len(candidates)))
	names := make([]string, 0, n)
	for _, instance := range spreadPick(candidates, n) {
		names = append(names, instance.Name)
	}

	return names
}
