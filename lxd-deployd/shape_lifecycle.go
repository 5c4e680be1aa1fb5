package main

import (
	"context"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// What follows a change to a shape, whichever path made it (the shapes API, a templated
// config, a rollback): events on /1.0/events and what the governor is told. Keeping it here
// means a shape made by a template and one made through the API behave alike.

// shapeCreated announces a new shape; one that starts below its minimum asks the governor
// to fill it.
func (l lifecycle) shapeCreated(ctx context.Context, by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, name string, put api.DeploymentShapePut) {
	l.emit(by, ref.Project, deploymentID, lifecycleShapeCreated, api.DeploymentShapeURL(ref.Project, ref.Name, name))
	l.watchImages()
	if put.ScalingMinimum > 0 {
		l.Notify(ctx, deploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
			Shape:       name,
			Target:      put.ScalingMinimum,
			Reason:      fmt.Sprintf("new shape: scaling_minimum is %d", put.ScalingMinimum),
			RequestedBy: "lxd-deployd",
		})
	}
}

// shapeUpdated announces a changed shape, and asks the governor to move it back within new
// bounds that left it outside them: the platform reports, the governor scales.
func (l lifecycle) shapeUpdated(ctx context.Context, by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, before api.DeploymentShape, put api.DeploymentShapePut) {
	after := before
	after.DeploymentShapePut = put
	after.Status = api.ShapeStatus(after.ScalingCurrent, put.ScalingMinimum, put.ScalingMaximum)
	l.emit(by, ref.Project, deploymentID, lifecycleShapeUpdated, api.DeploymentShapeURL(ref.Project, ref.Name, before.Name))
	l.watchImages()

	boundsMoved := before.ScalingMinimum != after.ScalingMinimum || before.ScalingMaximum != after.ScalingMaximum
	if !boundsMoved || after.Status != api.ShapeStatusOutOfBounds {
		return
	}

	l.Notify(ctx, deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: lifecycleShapeOutOfBounds, Shape: after.Name})
	l.Notify(ctx, deploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
		Shape:       after.Name,
		Target:      shapes.Clamp(after.ScalingCurrent, after.ScalingMinimum, after.ScalingMaximum),
		Reason:      fmt.Sprintf("the bounds changed to [%d, %d] and the shape has %d instances", after.ScalingMinimum, after.ScalingMaximum, after.ScalingCurrent),
		RequestedBy: "lxd-deployd",
	})
}

// shapeDeleted announces a deleted shape.
func (l lifecycle) shapeDeleted(by api.DeploymentRequestor, ref refs.DeploymentRef, deploymentID int64, name string) {
	l.emit(by, ref.Project, deploymentID, lifecycleShapeDeleted, api.DeploymentShapeURL(ref.Project, ref.Name, name))
}

// rollout.Revised announces the rollout a new revision started through the shape's trigger.
func (l lifecycle) shapeRevised(by api.DeploymentRequestor, ref refs.ShapeRef, deploymentID int64, revised rollout.Revised) {
	if revised.Revision != 0 {
		l.refillPools()
	}

	if revised.Rollout != 0 {
		l.RolloutEvent(by, ref, deploymentID, revised.Rollout, reporter.RolloutStarted)
		l.wake.call(func(w *wakers) func() { return w.rollouts })
	}
}

// watchImages has the image-change trigger look at the shapes' aliases now.
func (l lifecycle) watchImages() {
	l.wake.call(func(w *wakers) func() { return w.images })
}
