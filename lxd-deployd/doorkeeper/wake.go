package doorkeeper

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// wakeRequestedBy is who a front door's scale request says asked.
const wakeRequestedBy = "front-door"

// Notifier sends a deployment's webhook events (reporter.Reporter).
type Notifier interface {
	Notify(ctx context.Context, deploymentID int64, eventType string, metadata any)
}

// ScaleRequests counts the scale requests sent (metrics.Metrics).
type ScaleRequests interface {
	ScaleRequest(project string, deployment string, shape string)
}

// Waker asks a shape's governor for capacity when connections wait at its front door
// while it has no serving instance (doc/traffic.md, "Scale to zero"). Its Wake is the
// keeper's Config.Wake.
type Waker struct {
	DB       *db.Cluster
	Notifier Notifier
	Metrics  ScaleRequests
	Logger   *slog.Logger
}

// Wake sends the same scale request a raised minimum sends, target 1 (or the minimum),
// never a launch behind the governor's back. A shape that has instances (starting, not yet
// serving) is not asked again: they will serve.
func (w *Waker) Wake(s ObservedShape, waitingNow func() int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var shape *db.Shape
	err := w.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
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
		w.Logger.Warn("front door: cannot ask for capacity for waiting connections", "shape", s.Shape.Name, "deployment", s.Deployment, "waiting", waiting, "err", err)
		return
	}

	target, why := WakeTarget(*shape, waiting)
	if target == 0 {
		w.Logger.Info("front door: connections wait, no scale request", "shape", shape.Name, "deployment", s.Deployment, "waiting", waiting, "why", why)
		return
	}

	w.Logger.Info("front door: connections wait for a shape at zero: asking the governor", "shape", shape.Name, "deployment", s.Deployment, "waiting", waiting, "target", target)
	w.Notifier.Notify(ctx, shape.DeploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
		Shape:       shape.Name,
		Target:      target,
		Reason:      why,
		RequestedBy: wakeRequestedBy,
	})
	w.Metrics.ScaleRequest(s.Project, s.Deployment, shape.Name)
}

// WakeTarget is the size a wake asks for (0: none) and the request's reason.
func WakeTarget(shape db.Shape, waiting int) (int, string) {
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
