package reporter

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ShapeAction is a lifecycle action on a shape.
type ShapeAction string

// The shape actions.
const (
	ShapeCreated     ShapeAction = "deployment-shape-created"
	ShapeUpdated     ShapeAction = "deployment-shape-updated"
	ShapeRenamed     ShapeAction = "deployment-shape-renamed"
	ShapeDeleted     ShapeAction = "deployment-shape-deleted"
	ShapeDegraded    ShapeAction = "deployment-shape-degraded"
	ShapeOutOfBounds ShapeAction = "deployment-shape-out-of-bounds"
	ShapeResized     ShapeAction = "deployment-shape-resized"

	// Autohealing holds for the shape (correlated failures, a broken check, its replacement
	// limit), or resumes: the reason is in the shape's health_status.
	ShapeAutohealingHeld    ShapeAction = "deployment-shape-autohealing-held"
	ShapeAutohealingResumed ShapeAction = "deployment-shape-autohealing-resumed"
)

// Event is the action's event about the shape ref names (for a rename: its new name), with
// context (nil: none).
func (a ShapeAction) Event(ref refs.ShapeRef, context map[string]any) Event {
	return Event{Action: string(a), Project: ref.Project, Source: api.DeploymentShapeURL(ref.Project, ref.Name, ref.Shape), Context: context}
}
