package reporter

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// InstanceAction is a lifecycle action on an instance of a shape.
type InstanceAction string

// The instance actions.
const (
	InstanceCreated     InstanceAction = "deployment-instance-created"
	InstanceDeleted     InstanceAction = "deployment-instance-deleted"
	InstanceUpdated     InstanceAction = "deployment-instance-updated"
	InstanceStopped     InstanceAction = "deployment-instance-stopped"
	InstanceMissing     InstanceAction = "deployment-instance-missing"
	InstanceOrphaned    InstanceAction = "deployment-instance-orphaned"
	InstanceTerminating InstanceAction = "deployment-instance-terminating"
	InstanceLaunching   InstanceAction = "deployment-instance-launching"
	InstanceReady       InstanceAction = "deployment-instance-ready"
	InstanceKept        InstanceAction = "deployment-instance-kept"
	InstanceReplaced    InstanceAction = "deployment-instance-replaced"
	InstanceHealthy     InstanceAction = "deployment-instance-healthy"
	InstanceUnhealthy   InstanceAction = "deployment-instance-unhealthy"

	// A resize (or a rollout in place) applied new limits to the instance live, or left it
	// at its limit (doc/api.md, Resizing).
	InstanceResized       InstanceAction = "deployment-instance-resized"
	InstanceResizeRefused InstanceAction = "deployment-instance-resize-refused"

	// LXD reports the cluster member the instance is on offline, or online again
	// (doc/placement.md, Member loss): sent once per change, with the member in the context.
	InstanceUnreachable InstanceAction = "deployment-instance-unreachable"
	InstanceReachable   InstanceAction = "deployment-instance-reachable"
)

// Event is the action's event about the instance ref names, with context (nil: none).
func (a InstanceAction) Event(ref refs.InstanceRef, context map[string]any) Event {
	return Event{Action: string(a), Project: ref.Project, Source: api.DeploymentShapeInstanceURL(ref.Project, ref.Name, ref.Shape, ref.Instance), Context: context}
}

// LXDEvent is the action's event about an LXD instance that is no instance of a shape (an
// orphan tagged for a deployment): its source is the instance's LXD URL.
func (a InstanceAction) LXDEvent(project string, name string) Event {
	return Event{Action: string(a), Project: project, Source: api.InstanceURL(project, name)}
}
