package policy

import (
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	p, err := Parse([]byte(`
shapes:
  web:
    follow_scale_requests: true
    cpu_target: 0.5
    scale_up_cooldown: 30s
    scale_down_cooldown: 60s
    scale_down_stabilization: 2m
  worker:
    follow_scale_requests: false
    cpu_target: 2
    tolerance: 0.2
  db: {}
`))
	if err != nil {
		t.Fatal(err)
	}

	want := map[string]Shape{
		"web":    {FollowScaleRequests: true, CPUTarget: 0.5, Tolerance: 0.1, ScaleUpCooldown: 30 * time.Second, ScaleDownCooldown: time.Minute, ScaleDownStabilization: 2 * time.Minute},
		"worker": {FollowScaleRequests: false, CPUTarget: 2, Tolerance: 0.2},
		"db":     {FollowScaleRequests: true, Tolerance: 0.1},
	}

	if !reflect.DeepEqual(p.Shapes, want) {
		t.Errorf("got %+v\nwant %+v", p.Shapes, want)
	}

	if !reflect.DeepEqual(p.Names(), []string{"db", "web", "worker"}) {
		t.Errorf("names: %q", p.Names())
	}

	// A shape the file does not list follows scale requests and nothing else.
	if got := p.Shape("cache"); got != DefaultShape() || !got.FollowScaleRequests || got.CPUTarget != 0 {
		t.Errorf("unlisted shape: %+v", got)
	}

	var none *Policy
	if none.Shape("web") != DefaultShape() {
		t.Error("nil policy")
	}

	for _, text := range []string{"", "shapes: {}\n", "# nothing\n"} {
		p, err := Parse([]byte(text))
		if err != nil || len(p.Shapes) != 0 {
			t.Errorf("%q: %+v %v", text, p, err)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := map[string]string{
		"shapes:\n  web:\n    cpu_targte: 0.5\n":              "cpu_targte",
		"shape:\n  web: {}\n":                                 "shape",
		"shapes:\n  web:\n    scale_up_cooldown: 30\n":        `needs a unit, as in "30s"`,
		"shapes:\n  web:\n    scale_up_cooldown: soon\n":      `duration "soon"`,
		"shapes:\n  web:\n    scale_down_cooldown: -1s\n":     "scale_down_cooldown must not be negative",
		"shapes:\n  web:\n    cpu_target: -0.5\n":             "cpu_target must be 0 (off) or a positive number",
		"shapes:\n  web:\n    cpu_target: .nan\n":             "cpu_target",
		"shapes:\n  web:\n    tolerance: 1\n":                 "tolerance must be at least 0 and below 1",
		"shapes:\n  web:\n    follow_scale_requests: maybe\n": "line 3",
		"shapes:\n  1web: {}\n":                               `shape name "1web" must not start with a digit`,
		"shapes: [web]\n":                                     "policy file",
	}

	for text, want := range tests {
		_, err := Parse([]byte(text))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want one saying %q", text, err, want)
		}
	}
}

func TestShapeString(t *testing.T) {
	s := tracking().String()
	for _, want := range []string{"follows scale requests", "cpu target 0.5 cores per instance (tolerance 10%)", "cooldowns up 30s down 1m0s", "stabilization 2m0s"} {
		if !strings.Contains(s, want) {
			t.Errorf("%q does not say %q", s, want)
		}
	}

	if s := DefaultShape().String(); s != "follows scale requests, no cpu target tracking" {
		t.Errorf("default: %q", s)
	}
}
