package reporter

import (
	"context"
	"log/slog"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Reporter sends lifecycle events on behalf of whoever asked for a change (on /1.0/events
// and one log line each), tells the deployment's governor through its webhook, and counts
// what ended. The daemon has one, built when it is wired; a nil Reporter reports nothing.
//
// It points at no engine: the loops a change wakes are behind Waker, given at New.
type Reporter struct {
	events   *events.Server
	webhooks *webhooks.Dispatcher
	metrics  *metrics.Metrics
	logger   *slog.Logger
	waker    Waker
}

// Config is what a Reporter sends through; every part may be nil (not sent, not counted).
type Config struct {
	Events   *events.Server
	Webhooks *webhooks.Dispatcher
	Metrics  *metrics.Metrics

	// Logger, when set, logs every lifecycle event in one line, so the log tells what
	// changed and who asked even with nobody listening on /1.0/events.
	Logger *slog.Logger

	// Waker, when set, wakes the loops a change concerns. The engines report through the
	// reporter, so the daemon makes their wake-ups first (package loop) and hands the same
	// ones to the engines and, here, to the reporter.
	Waker Waker
}

// New returns a reporter.
func New(c Config) *Reporter {
	return &Reporter{events: c.Events, webhooks: c.Webhooks, metrics: c.Metrics, logger: c.Logger, waker: c.Waker}
}

// Waker wakes the loops a change concerns: the rollout engine, the image-change trigger and
// the warm pools.
type Waker interface {
	WakeRollouts()
	WatchImages()
	RefillPools()
}

// Metrics returns what the reporter counts into (nil: nothing), for the handlers that time
// LXD calls and template expansions.
func (r *Reporter) Metrics() *metrics.Metrics {
	if r == nil {
		return nil
	}

	return r.metrics
}

// Send sends a lifecycle event on /1.0/events and logs it, naming who asked for the change.
func (r *Reporter) Send(by api.DeploymentRequestor, deploymentID int64, event Event) {
	if r == nil {
		return
	}

	if r.logger != nil {
		r.logger.Info("lifecycle", "action", event.Action, "source", event.Source, "project", event.Project, "requestor", by.Name, "protocol", by.Protocol)
	}

	if r.events == nil {
		return
	}

	var requestor *lxdapi.EventLifecycleRequestor
	if by.Protocol != "" {
		requestor = &lxdapi.EventLifecycleRequestor{Username: by.Name, Protocol: by.Protocol}
	}

	r.events.Lifecycle(event.Project, deploymentID, event.Action, event.Source, event.Context, requestor)
}

// Notify queues a webhook event for the deployment's governor (nothing without a URL).
func (r *Reporter) Notify(ctx context.Context, deploymentID int64, eventType string, metadata any) {
	if r != nil && r.webhooks != nil {
		r.webhooks.Emit(context.WithoutCancel(ctx), deploymentID, eventType, metadata)
	}
}

// InstanceChanged tells the governor what happened to one of its instances.
func (r *Reporter) InstanceChanged(ctx context.Context, deploymentID int64, action InstanceAction, shape string, instance string) {
	r.Notify(ctx, deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(action), Shape: shape, Instance: instance})
}

// rolloutFinalStatus is the final status each rollout-ending action reports; the other
// rollout actions (started, step, paused, ...) end nothing.
var rolloutFinalStatus = map[RolloutAction]string{
	RolloutCompleted: api.RolloutComplete,
	RolloutFailed:    api.RolloutFailed,
	RolloutCancelled: api.RolloutCancelled,
	RolloutReverted:  api.RolloutReverted,
}

// RolloutEvent tells /1.0/events and the governor's webhook about a rollout's step, and
// counts a rollout that ended. Every rollout event goes through here, so each status change
// is counted once, on the member that made it.
func (r *Reporter) RolloutEvent(by api.DeploymentRequestor, ref refs.ShapeRef, deploymentID int64, number int, action RolloutAction) {
	if r == nil {
		return
	}

	status, ok := rolloutFinalStatus[action]
	if ok {
		r.metrics.RolloutFinished(ref.Project, ref.Name, ref.Shape, status)
	}

	r.Send(by, deploymentID, action.Event(ref, number))
	r.Notify(context.Background(), deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(action), Shape: ref.Shape})
}

// WakeRollouts has the rollout engine tick now (a rollout started).
func (r *Reporter) WakeRollouts() {
	if r != nil && r.waker != nil {
		r.waker.WakeRollouts()
	}
}

// WatchImages has the image-change trigger look at the shapes' aliases now (a shape was
// made or changed, so it learns the image its alias names before that alias can move).
func (r *Reporter) WatchImages() {
	if r != nil && r.waker != nil {
		r.waker.WatchImages()
	}
}

// RefillPools has the warm pool look at the shapes now rather than at its next round: a
// revised shape's pool is outdated (or resized), and the rollout a revision starts should
// find it remade at the new revision rather than launch cold. Every path that records a
// revision calls it: shape updates, apply and rollback (ShapeRevised), the image-change
// trigger and a rollout's revert.
func (r *Reporter) RefillPools() {
	if r != nil && r.waker != nil {
		r.waker.RefillPools()
	}
}
