package main

import (
	"context"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// rolloutFinalStatus is the final status each rollout-ending lifecycle action reports;
// the other rollout actions (started, step, paused, ...) end nothing.
var rolloutFinalStatus = map[reporter.RolloutAction]string{
	reporter.RolloutCompleted: api.RolloutComplete,
	reporter.RolloutFailed:    api.RolloutFailed,
	reporter.RolloutCancelled: api.RolloutCancelled,
	reporter.RolloutReverted:  api.RolloutReverted,
}

// countRollout counts a rollout that ended. It hears every rollout event (RolloutEvent is
// the one place they are sent), so each status change is counted once, on the member that
// made it.
func (l lifecycle) countRollout(ref refs.ShapeRef, action reporter.RolloutAction) {
	status, ok := rolloutFinalStatus[action]
	if ok {
		l.metrics.RolloutFinished(ref.Project, ref.Name, ref.Shape, status)
	}
}

// RolloutEvent tells /1.0/events and the governor's webhook about a rollout's step, and
// counts a rollout that ended: the rollout engine reports through it (rollout.Reporter).
func (l lifecycle) RolloutEvent(by api.DeploymentRequestor, ref refs.ShapeRef, deploymentID int64, number int, action reporter.RolloutAction) {
	l.countRollout(ref, action)
	l.Send(by, deploymentID, action.Event(ref, number))
	l.Notify(context.Background(), deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(action), Shape: ref.Shape})
}
