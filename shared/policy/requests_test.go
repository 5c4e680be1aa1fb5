package policy

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// perInstance is a requests-per-instance policy: 50 requests per second per instance,
// HPA-like timings.
func perInstance() Shape {
	return Shape{
		FollowScaleRequests:    true,
		RequestsPerInstance:    50,
		Tolerance:              DefaultTolerance,
		ScaleUpCooldown:        30 * time.Second,
		ScaleDownCooldown:      60 * time.Second,
		ScaleDownStabilization: 120 * time.Second,
	}
}

// door is the metrics input of a shape whose front door measured rate requests per second;
// a negative current leaves the front door figures out.
func door(rate float64, current int, minimum int, maximum int) Input {
	m := api.WebhookShapeMetrics{ScalingCurrent: current, ScalingMinimum: minimum, ScalingMaximum: maximum,
		Traffic: &api.WebhookTrafficMetrics{RequestRate: rate}}
	return MetricsInput(m)
}

// noDoor is the metrics input of a shape without front door figures, with instances busy
// enough that a CPU rule would scale up.
func noDoor(current int, minimum int, maximum int) Input {
	busy := 2.0
	m := api.WebhookShapeMetrics{ScalingCurrent: current, ScalingMinimum: minimum, ScalingMaximum: maximum,
		Instances: map[string]api.WebhookInstanceMetrics{"web1": {Status: "Running", CPURate: &busy}}}
	return MetricsInput(m)
}

func TestDecideRequests(t *testing.T) {
	tests := []struct {
		name   string
		policy func(*Shape)
		before func(s *State) // earlier history, at or before t0
		in     Input
		want   int    // Desired
		rec    int    // Recommended, when it differs from want (cooldowns)
		why    string // substrings of Why, separated by |
	}{
		// desired = ceil(request_rate / requests_per_instance).
		{name: "scale up", in: door(175, 2, 1, 10), want: 4, why: "request rate 175/s for a target of 50 per instance (87.5 per instance of 2)"},
		{name: "exact multiple", in: door(150, 2, 1, 10), want: 3},
		{name: "scale down", in: door(60, 5, 1, 10), want: 2, why: "12 per instance of 5"},
		{name: "no requests go to the minimum", in: door(0, 4, 1, 10), want: 1, why: "request rate 0/s|raised to scaling_minimum 1"},
		{name: "from no instance", in: door(120, 0, 0, 10), want: 3, why: "request rate 120/s"},
		{name: "not to zero without idle_to_zero", in: door(0, 3, 0, 10), want: 1, why: "kept at 1: scaling to zero is idle_to_zero's"},
		{name: "at zero with no requests", in: door(0, 0, 0, 10), want: 0},

		// Tolerance, on the rate per instance against the target.
		{name: "within tolerance above", in: door(220, 4, 1, 10), want: 4, why: "within tolerance: request rate 220/s"},
		{name: "within tolerance below", in: door(180, 4, 1, 10), want: 4, why: "within tolerance"},
		{name: "just above tolerance", in: door(555, 10, 1, 20), want: 12},
		{name: "just below tolerance", in: door(445, 10, 1, 20), want: 9},

		// Bounds.
		{name: "clamped to maximum", in: door(5000, 2, 1, 5), want: 5, why: "lowered to scaling_maximum 5"},
		{name: "clamped to minimum", in: door(10, 3, 2, 5), want: 2, why: "raised to scaling_minimum 2"},

		// No traffic data, no change: not even toward the bounds, and CPU does not decide.
		{name: "no front door figures", in: noDoor(3, 4, 5), want: 3, why: "no traffic data: no change"},
		{name: "a rate that is no load", in: door(math.NaN(), 3, 1, 5), want: 3, why: "no traffic data: no change (the front door reported a request rate of NaN)"},

		// Cooldowns and stabilization as for CPU and a query.
		{name: "scale up in cooldown", before: func(s *State) { s.Scaled(t0.Add(-10 * time.Second)) }, in: door(200, 2, 1, 10), want: 2, rec: 4, why: "cooldown: scale up to 4 held, last scaling 10s ago, scale_up_cooldown 30s|request rate 200/s"},
		{name: "scale down in cooldown", before: func(s *State) { s.Scaled(t0.Add(-40 * time.Second)) }, in: door(50, 4, 1, 10), want: 4, rec: 1, why: "cooldown: scale down to 1 held"},
		{name: "scale down after cooldown", before: func(s *State) { s.Scaled(t0.Add(-61 * time.Second)) }, in: door(50, 4, 1, 10), want: 1},
		{
			name:   "stabilization holds a scale down",
			before: func(s *State) { s.Decide(t0.Add(-60*time.Second), door(200, 4, 1, 10)) },
			in:     door(50, 4, 1, 10), want: 4,
			why: "stabilization: request rate 50/s for a target of 50 per instance (12.5 per instance of 4) wants 1, highest recommendation in the last 2m0s is 4",
		},
		{
			name:   "stabilization window passed",
			before: func(s *State) { s.Decide(t0.Add(-121*time.Second), door(200, 4, 1, 10)) },
			in:     door(50, 4, 1, 10), want: 1,
		},
		{
			name:   "metrics without traffic data leave no recommendation",
			before: func(s *State) { s.Decide(t0.Add(-60*time.Second), noDoor(4, 1, 10)) },
			in:     door(50, 4, 1, 10), want: 1,
		},

		// Scale to zero composes: idle first, then requests per instance.
		{
			name:   "idle to zero",
			policy: func(s *Shape) { s.IdleToZero = time.Minute },
			before: func(s *State) { s.Decide(t0.Add(-2*time.Minute), door(0, 2, 0, 10)) },
			in:     door(0, 2, 0, 10), want: 0, why: "idle to zero",
		},
	}

	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			p := perInstance()
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

			for _, want := range strings.Split(test.why, "|") {
				if !strings.Contains(d.Why, want) {
					t.Errorf("why %q does not say %q", d.Why, want)
				}
			}
		})
	}
}

func TestParseRequests(t *testing.T) {
	p, err := Parse([]byte("shapes:\n  web:\n    requests_per_instance: 50\n    scale_down_stabilization: 2m\n"))
	if err != nil {
		t.Fatal(err)
	}

	web := p.Shape("web")
	if web.RequestsPerInstance != 50 || web.Tolerance != DefaultTolerance || web.CPUTarget != 0 || web.Query != "" {
		t.Fatalf("web: %+v", web)
	}

	for _, want := range []string{"50 requests per second per instance through the front door (tolerance 10%)", "stabilization 2m0s"} {
		if !strings.Contains(web.String(), want) {
			t.Errorf("%q does not say %q", web.String(), want)
		}
	}

	if strings.Contains(web.String(), "no cpu target tracking") {
		t.Errorf("a requests shape is not without tracking: %q", web.String())
	}

	tests := map[string]string{
		"shapes:\n  web:\n    requests_per_instance: -1\n":                                     "requests_per_instance must be 0 (off) or a positive request rate",
		"shapes:\n  web:\n    requests_per_instance: .nan\n":                                   "requests_per_instance must be 0 (off) or a positive request rate",
		"shapes:\n  web:\n    requests_per_instance: 50\n    cpu_target: 0.5\n":                "requests_per_instance, cpu_target and query are exclusive",
		"shapes:\n  web:\n    requests_per_instance: 50\n    query: up\n    query_target: 5\n": "requests_per_instance, cpu_target and query are exclusive",
		"shapes:\n  web:\n    request_per_instance: 50\n":                                      "request_per_instance",
	}

	for text, want := range tests {
		_, err := Parse([]byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", text, err, want)
		}
	}
}
