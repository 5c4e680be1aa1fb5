package main

import (
	"context"
	"log/slog"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Lifecycle actions, in LXD's "<object>-<verb>" style.
const (
	lifecycleDeploymentCreated = "deployment-created"
	lifecycleDeploymentUpdated = "deployment-updated"
	lifecycleDeploymentRenamed = "deployment-renamed"
	lifecycleDeploymentDeleted = "deployment-deleted"
	lifecycleShapeCreated      = "deployment-shape-created"
	lifecycleShapeUpdated      = "deployment-shape-updated"
	lifecycleShapeRenamed      = "deployment-shape-renamed"
	lifecycleShapeDeleted      = "deployment-shape-deleted"
	lifecycleKeyCreated        = "deployment-key-created"
	lifecycleKeyUpdated        = "deployment-key-updated"
	lifecycleKeyRenamed        = "deployment-key-renamed"
	lifecycleKeyDeleted        = "deployment-key-deleted"
	lifecycleInstanceUpdated   = "deployment-instance-updated"
	lifecycleInstanceStopped   = "deployment-instance-stopped"
	lifecycleShapeOutOfBounds  = "deployment-shape-out-of-bounds"
)

// lifecycle sends lifecycle events on behalf of the request's caller, and tells the
// deployment's governor through its webhook.
type lifecycle struct {
	events   *events.Server
	webhooks *webhooks.Dispatcher

	// metrics counts launches, deletes and LXD calls (nil: not counted).
	metrics *metrics.Metrics

	// logger, when set, logs every lifecycle event in one line, so the log tells what
	// changed and who asked even with nobody listening on /1.0/events.
	logger *slog.Logger

	// wake holds the loops a change wakes (nil: none), shared by every copy.
	wake *wakers
}

// wakers are the loops a change wakes: the rollout engine, the image-change trigger and the
// warm pools. The daemon sets them once when it is wired (daemon.wire), before anything
// runs, and every copy of the reporter shares them: no copy holds a loop that is nil until
// a later call, and the reporter points at no engine.
type wakers struct {
	rollouts func()
	images   func()
	pools    func()
}

// call runs a waker that is set.
func (w *wakers) call(pick func(w *wakers) func()) {
	if w == nil {
		return
	}

	if f := pick(w); f != nil {
		f()
	}
}

// Notify queues a webhook event for the deployment's governor (nothing without a URL).
func (l lifecycle) Notify(ctx context.Context, deploymentID int64, eventType string, metadata any) {
	if l.webhooks != nil {
		l.webhooks.Emit(context.WithoutCancel(ctx), deploymentID, eventType, metadata)
	}
}

// instanceChanged tells the governor what happened to one of its instances.
func (l lifecycle) instanceChanged(ctx context.Context, deploymentID int64, action string, shape string, instance string) {
	l.Notify(ctx, deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: action, Shape: shape, Instance: instance})
}

// Send sends a typed lifecycle event (package reporter builds it) on /1.0/events, naming
// who asked for the change: the fleet reports through it (fleet.Reporter).
func (l lifecycle) Send(by api.DeploymentRequestor, deploymentID int64, event reporter.Event) {
	l.report(by, event.Project, deploymentID, event.Action, event.Source, event.Context)
}

// emit sends a lifecycle event on /1.0/events, naming who asked for the change.
func (l lifecycle) emit(by api.DeploymentRequestor, project string, deploymentID int64, action string, source string) {
	l.report(by, project, deploymentID, action, source, nil)
}

// report logs a lifecycle event and sends it on /1.0/events, with context (nil: none).
func (l lifecycle) report(by api.DeploymentRequestor, project string, deploymentID int64, action string, source string, metadata map[string]any) {
	if l.logger != nil {
		l.logger.Info("lifecycle", "action", action, "source", source, "project", project, "requestor", by.Name, "protocol", by.Protocol)
	}

	if l.events == nil {
		return
	}

	var requestor *lxdapi.EventLifecycleRequestor
	if by.Protocol != "" {
		requestor = &lxdapi.EventLifecycleRequestor{Username: by.Name, Protocol: by.Protocol}
	}

	l.events.Lifecycle(project, deploymentID, action, source, metadata, requestor)
}

// refillPools has the warm pool look at the shapes now rather than at its next round: a
// revised shape's pool is outdated (or resized), and the rollout a revision starts should
// find it remade at the new revision rather than launch cold. Every path that records a
// revision calls it: shape updates, apply and rollback (shapeRevised), the image-change
// trigger and a rollout's revert.
func (l lifecycle) refillPools() {
	l.wake.call(func(w *wakers) func() { return w.pools })
}
