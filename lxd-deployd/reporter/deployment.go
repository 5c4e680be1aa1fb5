package reporter

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// DeploymentAction is a lifecycle action on a deployment.
type DeploymentAction string

// The deployment actions.
const (
	DeploymentCreated DeploymentAction = "deployment-created"
	DeploymentUpdated DeploymentAction = "deployment-updated"
	DeploymentRenamed DeploymentAction = "deployment-renamed"
	DeploymentDeleted DeploymentAction = "deployment-deleted"
)

// Event is the action's event about the deployment ref names (for a rename: its new name).
func (a DeploymentAction) Event(ref refs.DeploymentRef) Event {
	return Event{Action: string(a), Project: ref.Project, Source: api.DeploymentURL(ref.Project, ref.Name)}
}

// KeyAction is a lifecycle action on a deployment key.
type KeyAction string

// The key actions.
const (
	KeyCreated KeyAction = "deployment-key-created"
	KeyUpdated KeyAction = "deployment-key-updated"
	KeyRenamed KeyAction = "deployment-key-renamed"
	KeyDeleted KeyAction = "deployment-key-deleted"
)

// Event is the action's event about key of the deployment ref names (for a rename: its new
// name).
func (a KeyAction) Event(ref refs.DeploymentRef, key string) Event {
	return Event{Action: string(a), Project: ref.Project, Source: api.DeploymentKeyURL(ref.Project, ref.Name, key)}
}

// ManifestAction is a lifecycle action on a deployment's manifest.
type ManifestAction string

// The manifest actions.
const (
	ManifestCreated ManifestAction = "deployment-manifest-created"
)

// Event is the action's event about manifest of the deployment ref names.
func (a ManifestAction) Event(ref refs.DeploymentRef, manifest string) Event {
	return Event{Action: string(a), Project: ref.Project, Source: api.DeploymentManifestURL(ref.Project, ref.Name, manifest)}
}
