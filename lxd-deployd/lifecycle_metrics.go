package main

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// rolloutFinalStatus is the final status each rollout-ending lifecycle action reports;
// the other rollout actions (started, step, paused, ...) end nothing.
var rolloutFinalStatus = map[string]string{
	lifecycleRolloutCompleted: api.RolloutComplete,
	lifecycleRolloutFailed:    api.RolloutFailed,
	lifecycleRolloutCancelled: api.RolloutCancelled,
	lifecycleRolloutReverted:  api.RolloutReverted,
}

// countRollout counts a rollout that ended. It hears every rollout event (rolloutEvent is
// the one place they are sent), so each status change is counted once, on the member that
// made it.
func (l lifecycle) countRollout(ref refs.ShapeRef, action string) {
	status, ok := rolloutFinalStatus[action]
	if ok {
		l.metrics.RolloutFinished(ref.Project, ref.Name, ref.Shape, status)
	}
}
