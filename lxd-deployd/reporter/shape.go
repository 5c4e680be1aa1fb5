package reporter

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ShapeAction is a lifecycle action on a shape.
type ShapeAction string

// The shape actions.
const (
	ShapeUpdated  ShapeAction = "deployment-shape-updated"
	ShapeDegraded ShapeAction = "deployment-shape-degraded"
)

// Event is the action's event about the shape ref names, with context (nil: none).
func (a ShapeAction) Event(ref refs.ShapeRef, context map[string]any) Event {
	return Event{Action: string(a), Project: ref.Project, Source: api.DeploymentShapeURL(ref.Project, ref.Name, ref.Shape), Context: context}
}
