package policy

import (
	"math"
	"strings"
	"testing"
	"time"
)

// requests is a query tracking policy: 100 requests per second per instance, HPA-like timings.
func requests() Shape {
	return Shape{
		FollowScaleRequests:    true,
		Query:                  `sum(rate(http_requests_total{shape="web"}[1m]))`,
		QueryTarget:            100,
		Tolerance:              DefaultTolerance,
		ScaleUpCooldown:        30 * time.Second,
		ScaleDownCooldown:      60 * time.Second,
		ScaleDownStabilization: 120 * time.Second,
	}
}

func TestDecideQuery(t *testing.T) {
	tests := []struct {
		name   string
		policy func(*Shape)
		before func(s *State) // earlier history, at or before t0
		in     Input
		want   int    // Desired
		rec    int    // Recommended, when it differs from want (cooldowns)
		why    string // substrings of Why, separated by |
	}{
		// desired = ceil(value / query_target): the value is the whole shape's.
		{name: "scale up", in: QueryInput(350, 2, 1, 10), want: 4, why: "query value 350 for a target of 100 per instance (175 per instance of 2)"},
		{name: "exact multiple", in: QueryInput(300, 2, 1, 10), want: 3},
		{name: "floating point noise does not add an instance", policy: func(s *Shape) { s.QueryTarget = 0.1 }, in: QueryInput(0.3, 1, 1, 10), want: 3},
		{name: "scale down", in: QueryInput(120, 5, 1, 10), want: 2, why: "24 per instance of 5"},
		{name: "no load goes to the minimum", in: QueryInput(0, 4, 1, 10), want: 1, why: "query value 0|raised to scaling_minimum 1"},
		{name: "no load and no minimum", in: QueryInput(0, 4, 0, 10), want: 0},
		{name: "from no instance", in: QueryInput(250, 0, 0, 10), want: 3, why: "query value 250"},
		{name: "from no instance and no load", in: QueryInput(0, 0, 0, 10), want: 0},

		// Tolerance, on the load per instance against the target.
		{name: "within tolerance above", in: QueryInput(440, 4, 1, 10), want: 4, why: "within tolerance: query value 440"},
		{name: "on the tolerance edge", in: QueryInput(330, 3, 1, 10), want: 3, why: "within tolerance"},
		{name: "within tolerance below", in: QueryInput(360, 4, 1, 10), want: 4, why: "within tolerance"},
		{name: "just above tolerance", in: QueryInput(1110, 10, 1, 20), want: 12},
		{name: "just below tolerance", in: QueryInput(890, 10, 1, 20), want: 9},
		{name: "custom tolerance", policy: func(s *Shape) { s.Tolerance = 0.5 }, in: QueryInput(290, 2, 1, 10), want: 2, why: "within tolerance"},
		{name: "no tolerance", policy: func(s *Shape) { s.Tolerance = 0 }, in: QueryInput(201, 2, 1, 10), want: 3},

		// Bounds.
		{name: "clamped to maximum", in: QueryInput(5000, 2, 1, 5), want: 5, why: "lowered to scaling_maximum 5"},
		{name: "clamped to minimum", in: QueryInput(10, 3, 2, 5), want: 2, why: "raised to scaling_minimum 2"},
		{name: "within tolerance but below the minimum", in: QueryInput(100, 1, 2, 5), want: 2, why: "within tolerance|raised to scaling_minimum 2"},

		// A value that is no load changes nothing, not even toward the bounds.
		{name: "NaN", in: QueryInput(math.NaN(), 3, 1, 5), want: 3, why: "no change: the query returned NaN"},
		{name: "infinite", in: QueryInput(math.Inf(1), 3, 1, 5), want: 3, why: "no change: the query returned +Inf"},
		{name: "negative", in: QueryInput(-5, 3, 4, 5), want: 3, why: "no change: the query returned -5"},

		// Off without a query.
		{name: "no query", policy: func(s *Shape) { s.Query, s.QueryTarget = "", 0 }, in: QueryInput(500, 1, 1, 5), want: 1, why: "query target tracking is off"},

		// Cooldowns and stabilization as for CPU.
		{name: "scale up in cooldown", before: func(s *State) { s.Scaled(t0.Add(-10 * time.Second)) }, in: QueryInput(400, 2, 1, 10), want: 2, rec: 4, why: "cooldown: scale up to 4 held, last scaling 10s ago, scale_up_cooldown 30s|query value 400"},
		{name: "scale down in cooldown", before: func(s *State) { s.Scaled(t0.Add(-40 * time.Second)) }, in: QueryInput(100, 4, 1, 10), want: 4, rec: 1, why: "cooldown: scale down to 1 held"},
		{name: "scale down after cooldown", before: func(s *State) { s.Scaled(t0.Add(-61 * time.Second)) }, in: QueryInput(100, 4, 1, 10), want: 1},
		{
			name:   "stabilization holds a scale down",
			before: func(s *State) { s.Decide(t0.Add(-60*time.Second), QueryInput(400, 4, 1, 10)) },
			in:     QueryInput(100, 4, 1, 10), want: 4,
			why: "stabilization: query value 100 for a target of 100 per instance (25 per instance of 4) wants 1, highest recommendation in the last 2m0s is 4",
		},
		{
			name:   "stabilization window passed",
			before: func(s *State) { s.Decide(t0.Add(-121*time.Second), QueryInput(400, 4, 1, 10)) },
			in:     QueryInput(100, 4, 1, 10), want: 1,
		},
		{
			name:   "a value that is no load leaves no recommendation",
			before: func(s *State) { s.Decide(t0.Add(-60*time.Second), QueryInput(math.NaN(), 4, 1, 10)) },
			in:     QueryInput(100, 4, 1, 10), want: 1,
		},
		{
			name:   "scale request replaces the history",
			before: func(s *State) { s.Decide(t0.Add(-60*time.Second), QueryInput(400, 4, 1, 10)) },
			in:     request(1, 4, 1, 10), want: 1,
		},
	}

	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			p := requests()
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

func TestParseQuery(t *testing.T) {
	p, err := Parse([]byte(`
shapes:
  web:
    query: 'sum(rate(http_requests_total{shape="web"}[1m]))'
    query_target: 100
    scale_down_stabilization: 2m
`))
	if err != nil {
		t.Fatal(err)
	}

	web := p.Shape("web")
	if web.Query != `sum(rate(http_requests_total{shape="web"}[1m]))` || web.QueryTarget != 100 || web.Tolerance != DefaultTolerance || web.CPUTarget != 0 {
		t.Fatalf("web: %+v", web)
	}

	for _, want := range []string{`query "sum(rate(http_requests_total{shape=\"web\"}[1m]))" with a target of 100 per instance (tolerance 10%)`, "stabilization 2m0s"} {
		if !strings.Contains(web.String(), want) {
			t.Errorf("%q does not say %q", web.String(), want)
		}
	}

	if strings.Contains(web.String(), "no cpu target tracking") {
		t.Errorf("a query shape is not without tracking: %q", web.String())
	}

	tests := map[string]string{
		"shapes:\n  web:\n    query: up\n":                                           "query needs a query_target",
		"shapes:\n  web:\n    query: ' '\n    query_target: 5\n":                     "query_target needs a query",
		"shapes:\n  web:\n    query_target: 5\n":                                     "query_target needs a query",
		"shapes:\n  web:\n    query: up\n    query_target: -1\n":                     "query_target must be a positive number",
		"shapes:\n  web:\n    query: up\n    query_target: .inf\n":                   "query_target must be a positive number",
		"shapes:\n  web:\n    query: up\n    query_target: 1\n    cpu_target: 0.5\n": "cpu_target and query are exclusive",
		"shapes:\n  web:\n    querry: up\n":                                          "querry",
	}

	for text, want := range tests {
		_, err := Parse([]byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", text, err, want)
		}
	}
}
