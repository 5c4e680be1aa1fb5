package policy

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

var t0 = time.Date(2026, 11, 22, 19, 0, 0, 0, time.UTC)

// cpu is a metrics input: current instances of which those in rates reported a cpu_rate.
func cpu(current int, minimum int, maximum int, rates ...float64) Input {
	return Input{Kind: Metrics, Current: current, Minimum: minimum, Maximum: maximum, CPURates: rates}
}

func request(target int, current int, minimum int, maximum int) Input {
	return Input{Kind: ScaleRequest, Current: current, Minimum: minimum, Maximum: maximum, Target: target, RequestedBy: "unix", Reason: "peak"}
}

// tracking is a target tracking policy at 0.5 cores with HPA-like timings.
func tracking() Shape {
	return Shape{
		FollowScaleRequests:    true,
		CPUTarget:              0.5,
		Tolerance:              DefaultTolerance,
		ScaleUpCooldown:        30 * time.Second,
		ScaleDownCooldown:      60 * time.Second,
		ScaleDownStabilization: 120 * time.Second,
	}
}

func repeat(rate float64, n int) []float64 {
	rates := make([]float64, n)
	for i := range rates {
		rates[i] = rate
	}

	return rates
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name   string
		policy func(*Shape)
		before func(s *State) // earlier history, at or before t0
		in     Input
		want   int    // Desired
		rec    int    // Recommended, when it differs from want (cooldowns)
		why    string // substrings of Why, separated by |
	}{
		// No decision without data.
		{name: "no cpu data", in: cpu(2, 1, 5), want: 2, why: "no cpu data"},
		{name: "tracking off", policy: func(s *Shape) { s.CPUTarget = 0 }, in: cpu(2, 1, 5, 0.9, 0.9), want: 2, why: "cpu target tracking is off"},

		// desired = ceil(current × observed/target).
		{name: "scale up", in: cpu(2, 1, 5, 0.9, 0.9), want: 4, why: "cpu observed 0.9 vs target 0.5"},
		{name: "scale up rounds up", in: cpu(3, 1, 10, 0.6, 0.6, 0.6), want: 4, why: "cpu observed 0.6 vs target 0.5"},
		{name: "scale down", in: cpu(4, 1, 5, 0.2, 0.2, 0.2, 0.2), want: 2, why: "cpu observed 0.2 vs target 0.5"},
		{name: "uneven load uses the mean", in: cpu(2, 1, 5, 1.5, 0.1), want: 4, why: "cpu observed 0.8 vs target 0.5"},

		// Tolerance: 10% either side of the target changes nothing; floating point noise
		// (0.55/0.5 = 1.1000000000000001) counts as on the edge.
		{name: "within tolerance above", in: cpu(10, 1, 20, repeat(0.55, 10)...), want: 10, why: "within tolerance: cpu observed 0.55 vs target 0.5"},
		{name: "within tolerance below", in: cpu(10, 1, 20, repeat(0.45, 10)...), want: 10, why: "within tolerance"},
		{name: "just above tolerance", in: cpu(10, 1, 20, repeat(0.56, 10)...), want: 12, why: "cpu observed 0.56"},
		{name: "just below tolerance", in: cpu(10, 1, 20, repeat(0.44, 10)...), want: 9, why: "cpu observed 0.44"},
		{name: "custom tolerance", policy: func(s *Shape) { s.Tolerance = 0.3 }, in: cpu(2, 1, 5, 0.6, 0.6), want: 2, why: "within tolerance"},

		// Bounds.
		{name: "clamped to maximum", in: cpu(2, 1, 5, 2, 2), want: 5, why: "cpu observed 2 vs target 0.5|lowered to scaling_maximum 5"},
		{name: "clamped to minimum", in: cpu(3, 2, 5, 0.01, 0.01, 0.01), want: 2, why: "raised to scaling_minimum 2"},
		{name: "below minimum and within tolerance", in: cpu(1, 2, 5, 0.5), want: 2, why: "within tolerance|raised to scaling_minimum 2"},
		{name: "above maximum and within tolerance", in: cpu(6, 1, 4, repeat(0.5, 6)...), want: 4, why: "lowered to scaling_maximum 4"},

		// Cooldowns count from the last scaling action, each direction on its own.
		{name: "scale up in cooldown", before: func(s *State) { s.Scaled(t0.Add(-10 * time.Second)) }, in: cpu(2, 1, 5, 0.9, 0.9), want: 2, rec: 4, why: "cooldown: scale up to 4 held, last scaling 10s ago, scale_up_cooldown 30s|cpu observed 0.9"},
		{name: "scale up after cooldown", before: func(s *State) { s.Scaled(t0.Add(-31 * time.Second)) }, in: cpu(2, 1, 5, 0.9, 0.9), want: 4, why: "cpu observed 0.9"},
		{name: "scale down in cooldown", before: func(s *State) { s.Scaled(t0.Add(-40 * time.Second)) }, in: cpu(4, 1, 5, 0.2, 0.2, 0.2, 0.2), want: 4, rec: 2, why: "cooldown: scale down to 2 held, last scaling 40s ago, scale_down_cooldown 1m0s"},
		{name: "scale up not held by the down cooldown", before: func(s *State) { s.Scaled(t0.Add(-40 * time.Second)) }, in: cpu(2, 1, 5, 0.9, 0.9), want: 4},
		{name: "scale down after cooldown", before: func(s *State) { s.Scaled(t0.Add(-61 * time.Second)) }, in: cpu(4, 1, 5, 0.2, 0.2, 0.2, 0.2), want: 2},
		{name: "no cooldown configured", policy: func(s *Shape) { s.ScaleUpCooldown = 0 }, before: func(s *State) { s.Scaled(t0) }, in: cpu(2, 1, 5, 0.9, 0.9), want: 4},
		{name: "no change in cooldown is not a cooldown", before: func(s *State) { s.Scaled(t0) }, in: cpu(2, 1, 5, 0.5, 0.5), want: 2, why: "within tolerance"},

		// Stabilization: a scale down goes only to the highest recommendation in the window.
		{
			name:   "stabilization holds a scale down",
			before: func(s *State) { s.Decide(t0.Add(-60*time.Second), cpu(4, 1, 5, repeat(0.5, 4)...)) },
			in:     cpu(4, 1, 5, 0.1, 0.1, 0.1, 0.1), want: 4,
			why: "stabilization: cpu observed 0.1 vs target 0.5 wants 1, highest recommendation in the last 2m0s is 4",
		},
		{
			name:   "stabilization limits a scale down",
			before: func(s *State) { s.Decide(t0.Add(-60*time.Second), cpu(3, 1, 5, 0.5, 0.25, 0.25)) }, // recommends 2
			in:     cpu(4, 1, 5, 0.1, 0.1, 0.1, 0.1), want: 2, why: "stabilization",
		},
		{
			name:   "stabilization window passed",
			before: func(s *State) { s.Decide(t0.Add(-121*time.Second), cpu(4, 1, 5, repeat(0.5, 4)...)) },
			in:     cpu(4, 1, 5, 0.1, 0.1, 0.1, 0.1), want: 1, why: "cpu observed 0.1",
		},
		{
			name:   "stabilization never scales up",
			before: func(s *State) { s.Decide(t0.Add(-10*time.Second), cpu(2, 1, 10, 1.25, 1.25)) }, // recommends 5
			in:     cpu(2, 1, 10, 0.75, 0.75), want: 3, why: "cpu observed 0.75",
		},
		{
			name:   "stabilization window of zero",
			policy: func(s *Shape) { s.ScaleDownStabilization = 0 },
			before: func(s *State) { s.Decide(t0.Add(-time.Second), cpu(4, 1, 5, repeat(0.5, 4)...)) },
			in:     cpu(4, 1, 5, 0.1, 0.1, 0.1, 0.1), want: 1,
		},
		{
			name: "stabilization then bounds",
			before: func(s *State) {
				s.Decide(t0.Add(-30*time.Second), cpu(6, 1, 6, repeat(0.5, 6)...)) // recommends 6
			},
			in: cpu(6, 1, 4, repeat(0.1, 6)...), want: 4, why: "stabilization|lowered to scaling_maximum 4",
		},

		// Instances counted but not reporting (just launched, stopped): idle for a scale
		// up, at the target for a scale down, as HPA does with missing pods.
		{name: "new instances not double counted", in: cpu(4, 1, 10, 0.9, 0.9), want: 4, why: "no change: cpu observed 0.9 vs target 0.5 (2 of 4 instances reporting)"},
		{name: "silent instances idle on scale up", in: cpu(3, 1, 10, 1.5, 1.5), want: 6, why: "(2 of 3 instances reporting)"},
		{name: "silent instances at target on scale down", in: cpu(4, 1, 10, 0.1, 0.1), want: 3, why: "cpu observed 0.1 vs target 0.5 (2 of 4 instances reporting)"},
		{name: "silent instances make it within tolerance", in: cpu(10, 1, 20, 0.2), want: 10, why: "within tolerance"},

		// Scale requests: the target within the bounds, nothing else.
		{name: "scale request up", in: request(3, 1, 1, 5), want: 3, why: `scale-request from unix: target 3 ("peak")`},
		{name: "scale request down", in: request(1, 4, 1, 5), want: 1, why: "scale-request from unix"},
		{name: "scale request above maximum", in: request(9, 1, 1, 5), want: 5, why: "lowered to scaling_maximum 5"},
		{name: "scale request below minimum", in: request(0, 3, 2, 5), want: 2, why: "raised to scaling_minimum 2"},
		{name: "scale request ignores cooldowns", before: func(s *State) { s.Scaled(t0.Add(-time.Second)) }, in: request(5, 1, 1, 5), want: 5},
		{
			name:   "scale request ignores stabilization",
			before: func(s *State) { s.Decide(t0.Add(-10*time.Second), cpu(4, 1, 5, repeat(0.5, 4)...)) },
			in:     request(1, 4, 1, 5), want: 1,
		},
		{name: "scale request works without a cpu target", policy: func(s *Shape) { s.CPUTarget = 0 }, in: request(2, 1, 1, 5), want: 2},
		{name: "scale request ignored", policy: func(s *Shape) { s.FollowScaleRequests = false }, in: request(3, 1, 1, 5), want: 1, why: "ignored: follow_scale_requests is false"},
		{name: "scale request from nobody", in: Input{Kind: ScaleRequest, Current: 1, Minimum: 0, Maximum: 5, Target: 2}, want: 2, why: "scale-request from unknown: target 2"},
		{name: "unknown input", in: Input{Kind: "lifecycle", Current: 2}, want: 2, why: "unknown input kind"},
	}

	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			p := tracking()
			if test.policy != nil {
				test.policy(&p)
			}

			s := NewState(p)
			if test.before != nil {
				test.before(s)
			}

			d := s.Decide(t0, test.in)
			if d.Current != test.in.Current || d.Desired != test.want {
				t.Errorf("decided %d -> %d, want %d -> %d (%s)", d.Current, d.Desired, test.in.Current, test.want, d.Why)
			}

			rec := test.rec
			if rec == 0 {
				rec = test.want
			}

			if d.Recommended != rec {
				t.Errorf("recommended %d, want %d (%s)", d.Recommended, rec, d.Why)
			}

			if test.why != "" {
				for _, want := range strings.Split(test.why, "|") {
					if !strings.Contains(d.Why, want) {
						t.Errorf("why %q does not say %q", d.Why, want)
					}
				}
			}
		})
	}
}

// A sequence through time: a spike, the cooldown, the dip held by stabilization, then the
// scale down once the window has passed; the admin's request resets the history.
func TestDecideOverTime(t *testing.T) {
	s := NewState(tracking())
	at := func(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

	steps := []struct {
		at     int
		in     Input
		scaled bool // the governor acted on the decision
		want   int
		why    string
	}{
		{at: 0, in: cpu(2, 1, 10, 1, 1), scaled: true, want: 4, why: "cpu observed 1"},
		{at: 20, in: cpu(4, 1, 10, 1, 1, 1, 1), want: 4, why: "cooldown: scale up to 8 held"},
		{at: 40, in: cpu(4, 1, 10, 0.75, 0.75, 0.75, 0.75), scaled: true, want: 6, why: "cpu observed 0.75"},
		{at: 60, in: cpu(6, 1, 10, repeat(0.1, 6)...), want: 6, why: "stabilization: cpu observed 0.1 vs target 0.5 wants 2, highest recommendation in the last 2m0s is 8"},
		{at: 141, in: cpu(6, 1, 10, repeat(0.1, 6)...), want: 6, why: "highest recommendation in the last 2m0s is 6"},
		{at: 161, in: cpu(6, 1, 10, repeat(0.1, 6)...), scaled: true, want: 2, why: "cpu observed 0.1"},
		{at: 162, in: request(7, 2, 1, 10), scaled: true, want: 7, why: "scale-request"},
		{at: 200, in: cpu(7, 1, 10, repeat(0.2, 7)...), want: 7, why: "highest recommendation in the last 2m0s is 7"},
		{at: 283, in: cpu(7, 1, 10, repeat(0.2, 7)...), scaled: true, want: 3, why: "cpu observed 0.2"},
	}

	for i, step := range steps {
		d := s.Decide(at(step.at), step.in)
		if d.Desired != step.want || !strings.Contains(d.Why, step.why) {
			t.Fatalf("step %d at %ds: desired %d (%s), want %d (%s)", i, step.at, d.Desired, d.Why, step.want, step.why)
		}

		if step.scaled {
			s.Scaled(at(step.at))
		}
	}
}

func TestDecisionAction(t *testing.T) {
	for _, test := range []struct {
		d      Decision
		action Action
		delta  int
	}{
		{Decision{Current: 2, Desired: 4}, ScaleUp, 2},
		{Decision{Current: 4, Desired: 1}, ScaleDown, -3},
		{Decision{Current: 3, Desired: 3}, None, 0},
	} {
		if test.d.Action() != test.action || test.d.Delta() != test.delta {
			t.Errorf("%+v: %s %d, want %s %d", test.d, test.d.Action(), test.d.Delta(), test.action, test.delta)
		}
	}
}

func TestMetricsInput(t *testing.T) {
	rate := func(r float64) *float64 { return &r }
	in := MetricsInput(api.WebhookShapeMetrics{
		ScalingCurrent: 5,
		ScalingMinimum: 1,
		ScalingMaximum: 8,
		Instances: map[string]api.WebhookInstanceMetrics{
			"web-b": {Status: "Running", CPURate: rate(0.5)},
			"web-a": {Status: "Running", CPURate: rate(0.25)},
			"web-c": {Status: "Running"},                            // first sample: no rate
			"web-d": {Status: "Stopped", CPURate: rate(0)},          // not serving
			"web-e": {Status: "Running", CPURate: rate(math.NaN())}, // nonsense
		},
	})

	want := Input{Kind: Metrics, Current: 5, Minimum: 1, Maximum: 8, CPURates: []float64{0.25, 0.5}}
	if !reflect.DeepEqual(in, want) {
		t.Errorf("got %+v, want %+v", in, want)
	}

	r := ScaleRequestInput(api.WebhookScaleRequestMetadata{Shape: "web", Target: 3, Reason: "peak", RequestedBy: "admin"}, 1, 0, 4)
	if r.Kind != ScaleRequest || r.Target != 3 || r.Current != 1 || r.Maximum != 4 || r.RequestedBy != "admin" || r.Reason != "peak" {
		t.Errorf("scale request input: %+v", r)
	}
}

func TestScaleDownOrder(t *testing.T) {
	at := func(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }
	instances := []api.DeploymentInstance{
		{Name: "web-old", State: rules.Created, CreatedAt: at(0)},
		{Name: "web-new", State: rules.Created, CreatedAt: at(30)},
		{Name: "web-mid", State: rules.Created, CreatedAt: at(10)},
		{Name: "web-gone", State: rules.Missing, CreatedAt: at(5)},
		{Name: "web-going", State: rules.Deleting, CreatedAt: at(40)},
		{Name: "web-twin-a", State: rules.Created, CreatedAt: at(20)},
		{Name: "web-twin-b", State: rules.Created, CreatedAt: at(20)},
	}

	tests := []struct {
		n    int
		want []string
	}{
		{0, []string{}},
		// Missing and deleting instances do not count in scaling_current: deleting them
		// would not shrink the shape, so they are never picked.
		{1, []string{"web-new"}},
		{3, []string{"web-new", "web-twin-b", "web-twin-a"}},
		{10, []string{"web-new", "web-twin-b", "web-twin-a", "web-mid", "web-old"}},
		{-1, []string{}},
	}

	for _, test := range tests {
		got := ScaleDownOrder(instances, test.n)
		if !reflect.DeepEqual(got, test.want) {
			t.Errorf("n=%d: %q, want %q", test.n, got, test.want)
		}
	}

	// During a rollout, outdated instances go first, oldest revision or not.
	instances[0].Outdated = true
	if got := ScaleDownOrder(instances, 2); !reflect.DeepEqual(got, []string{"web-old", "web-new"}) {
		t.Errorf("outdated first: %q", got)
	}
}

// Unhealthy instances go first whatever their age; draining and replaced ones never.
func TestScaleDownOrderUnhealthyFirst(t *testing.T) {
	at := func(minutes int) time.Time { return t0.Add(time.Duration(minutes) * time.Minute) }
	instances := []api.DeploymentInstance{
		{Name: "web-old-sick", State: rules.Created, Health: api.HealthUnhealthy, CreatedAt: at(0)},
		{Name: "web-new", State: rules.Created, Health: api.HealthHealthy, CreatedAt: at(30)},
		{Name: "web-mid-sick", State: rules.Created, Health: api.HealthUnhealthy, CreatedAt: at(10)},
		{Name: "web-draining", State: rules.Created, Lifecycle: api.LifecycleTerminatingWait, CreatedAt: at(40)},
		{Name: "web-replaced", State: rules.Replacing, Health: api.HealthUnhealthy, CreatedAt: at(50)},
		{Name: "web-older", State: rules.Created, Health: api.HealthStarting, CreatedAt: at(5)},
	}

	got := ScaleDownOrder(instances, 10)
	want := []string{"web-mid-sick", "web-old-sick", "web-new", "web-older"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("order %q, want %q", got, want)
	}
}
