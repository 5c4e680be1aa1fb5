package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/doorkeeper"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// wakeRequestedBy is who a front door's scale request says asked.
const wakeRequestedBy = "front-door"

// wakeShape asks a shape's governor for capacity because connections wait at its front
// door while it has no serving instance (doc/traffic.md, "Scale to zero"): the same scale
// request a raised minimum sends, target 1 (or the minimum), never a launch behind the
// governor's back. A shape that has instances (starting, not yet serving) is not asked
// again: they will serve.
func (d *daemon) wakeShape(s doorkeeper.ObservedShape, waitingNow func() int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var shape *db.Shape
	err := d.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		shapes, err := db.GetShapes(ctx, tx, db.ShapeFilter{DeploymentID: s.Shape.DeploymentID, Name: s.Shape.Name})
		if err != nil {
			return err
		}

		if len(shapes) == 1 {
			shape = &shapes[0]
		}

		return nil
	})
	waiting := waitingNow()
	if err != nil || shape == nil {
		d.logger.Warn("front door: cannot ask for capacity for waiting connections", "shape", s.Shape.Name, "deployment", s.Deployment, "waiting", waiting, "err", err)
		return
	}

	target, why := wakeTarget(*shape, waiting)
	if target == 0 {
		d.logger.Info("front door: connections wait, no scale request", "shape", shape.Name, "deployment", s.Deployment, "waiting", waiting, "why", why)
		return
	}

	d.logger.Info("front door: connections wait for a shape at zero: asking the governor", "shape", shape.Name, "deployment", s.Deployment, "waiting", waiting, "target", target)
	d.reporter.Notify(ctx, shape.DeploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
		Shape:       shape.Name,
		Target:      target,
		Reason:      why,
		RequestedBy: wakeRequestedBy,
	})
	d.metrics.ScaleRequest(s.Project, s.Deployment, shape.Name)
}

// wakeTarget is the size a wake asks for (0: none) and the request's reason.
func wakeTarget(shape db.Shape, waiting int) (int, string) {
	requests := "requests wait"
	if waiting == 1 {
		requests = "request waits"
	}

	switch {
	case shape.ScalingCurrent > 0:
		return 0, fmt.Sprintf("%d %s and the shape has %d instances on their way to serving", waiting, requests, shape.ScalingCurrent)
	case shape.ScalingMaximum < 1:
		return 0, fmt.Sprintf("%d %s but scaling_maximum is 0", waiting, requests)
	}

	return max(1, shape.ScalingMinimum), fmt.Sprintf("wake from zero: %d %s at the front door for an instance", waiting, requests)
}
