package reporter

import (
	"context"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// What follows a change to a shape, whichever path made it (the shapes API, a templated
// config, a rollback): events on /1.0/events and what the governor is told. Keeping it here
// means a shape made by a template and one made through the API behave alike.

// ShapeCreated announces a new shape; one that starts below its minimum asks the governor
// to fill it.
func (r *Reporter) ShapeCreated(ctx context.Context, by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, name string, put api.DeploymentShapePut) {
	r.Send(by, deploymentID, ShapeCreated.Event(refs.ShapeRef{DeploymentRef: ref, Shape: name}, nil))
	r.WatchImages()
	if put.ScalingMinimum > 0 {
		r.Notify(ctx, deploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
			Shape:       name,
			Target:      put.ScalingMinimum,
			Reason:      fmt.Sprintf("new shape: scaling_minimum is %d", put.ScalingMinimum),
			RequestedBy: "lxd-deployd",
		})
	}
}

// ShapeUpdated announces a changed shape, and asks the governor to move it back within new
// bounds that left it outside them: the platform reports, the governor scales.
func (r *Reporter) ShapeUpdated(ctx context.Context, by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, before api.DeploymentShape, put api.DeploymentShapePut) {
	after := before
	after.DeploymentShapePut = put
	after.Status = api.ShapeStatus(after.ScalingCurrent, put.ScalingMinimum, put.ScalingMaximum)
	r.Send(by, deploymentID, ShapeUpdated.Event(refs.ShapeRef{DeploymentRef: ref, Shape: before.Name}, nil))
	r.WatchImages()

	boundsMoved := before.ScalingMinimum != after.ScalingMinimum || before.ScalingMaximum != after.ScalingMaximum
	if !boundsMoved || after.Status != api.ShapeStatusOutOfBounds {
		return
	}

	r.Notify(ctx, deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(ShapeOutOfBounds), Shape: after.Name})
	r.Notify(ctx, deploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
		Shape:       after.Name,
		Target:      shapes.Clamp(after.ScalingCurrent, after.ScalingMinimum, after.ScalingMaximum),
		Reason:      fmt.Sprintf("the bounds changed to [%d, %d] and the shape has %d instances", after.ScalingMinimum, after.ScalingMaximum, after.ScalingCurrent),
		RequestedBy: "lxd-deployd",
	})
}

// ShapeDeleted announces a deleted shape.
func (r *Reporter) ShapeDeleted(by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, name string) {
	r.Send(by, deploymentID, ShapeDeleted.Event(refs.ShapeRef{DeploymentRef: ref, Shape: name}, nil))
}

// ShapeRevised follows a new revision of a shape (0: none was recorded): its warm pool is
// remade, and the rollout its trigger started (0: none) is announced and run now.
func (r *Reporter) ShapeRevised(by api.DeploymentRequestor, ref refs.ShapeRef, deploymentID int64, revision int, rollout int) {
	if revision != 0 {
		r.RefillPools()
	}

	if rollout != 0 {
		r.RolloutEvent(by, ref, deploymentID, rollout, RolloutStarted)
		r.WakeRollouts()
	}
}
