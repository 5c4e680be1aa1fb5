package validate

import (
	"math"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestShapeHealthHolds: the hold and replacement-limit settings take sane values only,
// and a command written as a shell line (a typo that no instance can start) is refused
// when written, with the fix.
func TestShapeHealthHolds(t *testing.T) {
	for _, h := range []api.DeploymentShapeHealth{
		{Command: []string{"true"}, HoldShare: 0.5, ReplacementLimit: 3, ReplacementWindow: "30m"},
		{Command: []string{"true"}, HoldShare: 1},
		{Command: []string{"sh", "-c", "test -f /ready"}},
	} {
		err := ShapeHealth(&h)
		if err != nil {
			t.Errorf("%+v: %v", h, err)
		}
	}

	for want, h := range map[string]api.DeploymentShapeHealth{
		"health.hold_share (negative)":   {Command: []string{"true"}, HoldShare: -0.1},
		"health.hold_share (above 1)":    {Command: []string{"true"}, HoldShare: 1.5},
		"health.hold_share (NaN)":        {Command: []string{"true"}, HoldShare: math.NaN()},
		"health.replacement_limit":       {Command: []string{"true"}, ReplacementLimit: -1},
		"health.replacement_window":      {Command: []string{"true"}, ReplacementWindow: "1s"},
		"health.command is argv":         {Command: []string{"sh -c true"}},
		"health.command is argv (alone)": {Command: []string{"test -f /ready"}},
	} {
		err := ShapeHealth(&h)
		name, _, _ := strings.Cut(want, " (")
		if err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: want an error naming it, got %v", want, err)
		}
	}

	err := ShapeHealth(&api.DeploymentShapeHealth{Command: []string{"sh -c true"}})
	if err == nil || !strings.Contains(err.Error(), `["sh" "-c" "true"]`) {
		t.Errorf("the refusal of a shell line must show the argv to use: %v", err)
	}
}
