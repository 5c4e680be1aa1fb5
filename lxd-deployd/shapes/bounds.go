// Package shapes holds the rules of a shape's life that every path shares: when a shape may
// grow or shrink, and what changed between two versions of it. The governor API, templated
// configs, reconcile, rollouts and autohealing all ask here, so that none of them carries
// a copy of a rule that could drift.
package shapes

import (
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
)

// CheckGrow refuses one more instance when it would take the shape above its maximum. It
// must run in the transaction that records the new instance, so that concurrent launches
// cannot both pass it.
func CheckGrow(shape *db.Shape) error {
	if shape.ScalingCurrent+1 > shape.ScalingMaximum {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is at its scaling maximum (%d): raise scaling_maximum or delete an instance first", shape.Name, shape.ScalingMaximum)
	}

	return nil
}

// CheckShrink refuses removing one instance when it would take the shape below its
// minimum. Like CheckGrow it runs in the transaction that marks the instance as going.
// Instances waiting in terminating:wait still count, but are already on their way out.
func CheckShrink(shape *db.Shape) error {
	if shape.ScalingCurrent-shape.Terminating-1 < shape.ScalingMinimum {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is at its scaling minimum (%d): lower scaling_minimum or launch an instance first", shape.Name, shape.ScalingMinimum)
	}

	return nil
}
