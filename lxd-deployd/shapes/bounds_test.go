package shapes

import (
	"strings"
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

// Instances being deleted count against the maximum until LXD has deleted them, and the
// refusal says so; they do not count toward the minimum, so a second delete cannot spend
// the same instance twice.
func TestBoundsCountGoingInstances(t *testing.T) {
	s := &db.Shape{Going: 1}
	s.Name, s.ScalingCurrent, s.ScalingMinimum, s.ScalingMaximum = "web", 2, 1, 3
	err := CheckGrow(s)
	if err == nil || !strings.Contains(err.Error(), "1 instance is still being deleted: retry when it is gone") {
		t.Fatalf("2 instances and 1 being deleted at maximum 3: want a refusal that names the delete, got %v", err)
	}

	s.Going = 2
	s.ScalingCurrent = 1
	err = CheckGrow(s)
	if err == nil || !strings.Contains(err.Error(), "2 instances are still being deleted") {
		t.Fatalf("want the number of deletes in flight, got %v", err)
	}

	s.Going, s.ScalingCurrent = 1, 1
	if CheckGrow(s) != nil {
		t.Fatal("1 instance and 1 being deleted at maximum 3: one more fits")
	}

	// Minimum 1, two instances, one already being deleted: the last one must stay.
	s.ScalingCurrent, s.ScalingMinimum, s.Going = 1, 1, 1
	if CheckShrink(s) == nil {
		t.Fatal("a delete in flight must not let a second delete go below the minimum")
	}
}
