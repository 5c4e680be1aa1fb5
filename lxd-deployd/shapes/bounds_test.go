package shapes

import (
	"testing"

	"github.com/lxd-deployd/lxd-deployd/db"
)

func TestBoundChecks(t *testing.T) {
	shape := func(current, min, max int) *db.Shape {
		s := &db.Shape{}
		s.Name, s.ScalingCurrent, s.ScalingMinimum, s.ScalingMaximum = "web", current, min, max
		return s
	}

	if CheckGrow(shape(2, 1, 3)) != nil || CheckGrow(shape(3, 1, 3)) == nil || CheckGrow(shape(5, 1, 3)) == nil {
		t.Error("CheckGrow must refuse at or above the maximum")
	}

	if CheckShrink(shape(2, 1, 3)) != nil || CheckShrink(shape(1, 1, 3)) == nil || CheckShrink(shape(0, 1, 3)) == nil {
		t.Error("CheckShrink must refuse at or below the minimum")
	}

	// Out of bounds above the maximum: shrinking moves toward the bounds and is allowed.
	if CheckShrink(shape(5, 1, 3)) != nil {
		t.Error("shrinking an oversize shape must be allowed")
	}

	// Out of bounds below the minimum: growing is allowed.
	if CheckGrow(shape(0, 2, 3)) != nil {
		t.Error("growing an undersize shape must be allowed")
	}
}

// Instances draining in terminating:wait still count, but a second delete must not count
// them again.
func TestCheckShrinkLeavesDrainingOut(t *testing.T) {
	s := &db.Shape{Terminating: 1}
	s.Name, s.ScalingCurrent, s.ScalingMinimum, s.ScalingMaximum = "web", 3, 1, 3
	if CheckShrink(s) != nil {
		t.Fatal("3 instances, 1 draining, minimum 1: one more may go")
	}

	s.Terminating = 2
	if CheckShrink(s) == nil {
		t.Fatal("3 instances, 2 draining, minimum 1: none more may go")
	}
}
