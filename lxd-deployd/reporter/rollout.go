package reporter

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// RolloutAction is a lifecycle action on a rollout of a shape.
type RolloutAction string

// The rollout actions.
const (
	RolloutStarted   RolloutAction = "deployment-shape-rollout-started"
	RolloutStep      RolloutAction = "deployment-shape-rollout-step"
	RolloutPaused    RolloutAction = "deployment-shape-rollout-paused"
	RolloutResumed   RolloutAction = "deployment-shape-rollout-resumed"
	RolloutPromoted  RolloutAction = "deployment-shape-rollout-promoted"
	RolloutCompleted RolloutAction = "deployment-shape-rollout-completed"
	RolloutFailed    RolloutAction = "deployment-shape-rollout-failed"
	RolloutCancelled RolloutAction = "deployment-shape-rollout-cancelled"
	RolloutReverted  RolloutAction = "deployment-shape-rollout-reverted"
)

// Event is the action's event about rollout number of the shape ref names.
func (a RolloutAction) Event(ref refs.ShapeRef, number int) Event {
	return Event{Action: string(a), Project: ref.Project, Source: api.DeploymentShapeRolloutURL(ref.Project, ref.Name, ref.Shape, number)}
}
