package reporter

import (
	"context"
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ShapeScheduled follows a scheduled action that set a shape's bounds (doc/governors.md,
// "Scheduled actions"). As for any change of bounds, the platform reports and the governor
// scales: a shape the new bounds leave outside them is announced out of bounds and the
// governor is asked for the nearest bound; an action with a size asks for that size
// instead (one request: two would contradict each other).
func (r *Reporter) ShapeScheduled(ctx context.Context, by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, before api.DeploymentShape, put api.DeploymentShapePut, action api.DeploymentShapeScheduledAction, at time.Time) {
	shape := refs.ShapeRef{DeploymentRef: ref, Shape: before.Name}
	r.Send(by, deploymentID, ShapeUpdated.Event(shape, nil))
	status := api.ShapeStatus(before.ScalingCurrent, put.ScalingMinimum, put.ScalingMaximum)
	boundsMoved := before.ScalingMinimum != put.ScalingMinimum || before.ScalingMaximum != put.ScalingMaximum
	if boundsMoved && status == api.ShapeStatusOutOfBounds {
		r.Notify(ctx, deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(ShapeOutOfBounds), Shape: before.Name})
	}

	target := shapes.Clamp(before.ScalingCurrent, put.ScalingMinimum, put.ScalingMaximum)
	if action.Size != nil {
		target = *action.Size
	}

	if target == before.ScalingCurrent {
		return
	}

	r.Notify(ctx, deploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
		Shape:       before.Name,
		Target:      target,
		Reason:      fmt.Sprintf("scheduled action %s (%s) set the bounds to [%d, %d] and the shape has %d instances", action.Name, at.Format(time.RFC3339), put.ScalingMinimum, put.ScalingMaximum, before.ScalingCurrent),
		RequestedBy: "schedule",
	})
}
