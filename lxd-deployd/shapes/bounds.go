// Package shapes holds the rules of a shape's life that every path shares: when a shape may
// grow or shrink (bounds.go), which instances count, are outdated or ready and how a target
// is clamped (instances.go), how a rollout moves (rollout.go), and what changed between two
// versions of a shape (changes.go). The governor API, templated configs, reconcile,
// rollouts, autohealing and the metrics all ask here, so that none of them carries a copy
// of a rule that could drift. The rules over instance states themselves (counted, going,
// outdated, settled, ready, clamp, room) live below the cgo line in shared/rules, with the
// SQL that counts instances built from the same lists.
package shapes

import (
	"fmt"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// CheckGrow refuses one more instance when it would take the shape above its maximum as
// LXD sees it: instances on their way out (Going) count until LXD has deleted them, so a
// launch right after a delete waits for it rather than let LXD hold one more. It must run
// in the transaction that records the new instance, so that concurrent launches cannot
// both pass it.
func CheckGrow(shape *db.Shape) error {
	if rules.Room(shape.ScalingMaximum, shape.ScalingCurrent, 0) == 0 {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is at its scaling maximum (%d): raise scaling_maximum or delete an instance first", shape.Name, shape.ScalingMaximum)
	}

	if rules.Room(shape.ScalingMaximum, shape.ScalingCurrent, shape.Going) == 0 {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is at its scaling maximum (%d): %s still being deleted: retry when it is gone", shape.Name, shape.ScalingMaximum, instancesAre(shape.Going))
	}

	return nil
}

// instancesAre says "1 instance is" or "n instances are".
func instancesAre(n int) string {
	if n == 1 {
		return "1 instance is"
	}

	return fmt.Sprintf("%d instances are", n)
}

// CheckShrink refuses removing one instance when it would take the shape below its
// minimum. Like CheckGrow it runs in the transaction that marks the instance as going.
// Instances waiting in terminating:wait still count, but are already on their way out.
// Instances being deleted (Going) are not in ScalingCurrent: they count against the
// maximum but not toward the minimum, so two deletes in a row cannot both spend the same
// instance above the minimum.
func CheckShrink(shape *db.Shape) error {
	if shape.ScalingCurrent-shape.Terminating-1 < shape.ScalingMinimum {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is at its scaling minimum (%d): lower scaling_minimum or launch an instance first", shape.Name, shape.ScalingMinimum)
	}

	return nil
}
