package doorkeeper

import (
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
)

func TestWakeTarget(t *testing.T) {
	shape := func(current, minimum, maximum int) db.Shape {
		var s db.Shape
		s.ScalingCurrent, s.ScalingMinimum, s.ScalingMaximum = current, minimum, maximum
		return s
	}

	for _, c := range []struct {
		shape   db.Shape
		waiting int
		target  int
		why     string
	}{
		{shape(0, 0, 5), 1, 1, "wake from zero: 1 request waits"},
		{shape(0, 0, 5), 12, 1, "wake from zero: 12 requests wait"},
		{shape(0, 2, 5), 3, 2, "3 requests wait"},
		{shape(1, 0, 5), 3, 0, "1 instances on their way"},
		{shape(0, 0, 0), 3, 0, "scaling_maximum is 0"},
	} {
		target, why := WakeTarget(c.shape, c.waiting)
		if target != c.target || !strings.Contains(why, c.why) {
			t.Errorf("%+v waiting %d: %d %q, want %d %q", c.shape, c.waiting, target, why, c.target, c.why)
		}
	}
}
