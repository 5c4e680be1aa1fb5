package main

import (
	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
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

// countReplacement counts how a replacement autohealing started for old ended.
func (l lifecycle) countReplacement(old db.Instance, result string) {
	l.metrics.Replacement(old.Project, old.Deployment, old.Shape, result)
}

// countHookEnd counts a lifecycle hook wait that ended with action. A wait without a
// posted action ended because its deadline passed (the shape's default_action).
func (l lifecycle) countHookEnd(row db.Instance, action string) {
	l.metrics.HookWaitEnded(row.Project, row.Deployment, row.Shape, row.Hook.Hook, action, row.Hook.Action == "")
}

// The results autohealing reports, named here so autoheal.go reads as before.
const (
	replacementOK     = metrics.ReplacementOK
	replacementFailed = metrics.ReplacementFailed
	replacementGaveUp = metrics.ReplacementGaveUp
)
