package rollout

import (
	"context"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// What the rollout engine needs of the rest of the daemon, as Nomad's
// nomad/deployment_watcher_shims.go keeps its deployment watcher apart from the server:
// the engine sees the fleet and the reporter only through these interfaces, which the
// daemon fills once when it is wired. Package fleet never imports this package.

// Fleet makes and removes the instances a rollout asks for. Its launches and deletes keep
// their bound check; a rollout's own say so in their change (FromRollout, and InTx to
// record the step in the reservation's transaction).
type Fleet interface {
	StartLaunch(ctx context.Context, ref refs.InstanceRef, c fleet.Change) (*operations.Operation, error)
	StartDelete(ctx context.Context, ref refs.InstanceRef, c fleet.Change) (*operations.Operation, error)

	// RefillPools has the warm pools remade now: a revert or a new image outdates them.
	RefillPools()
}

// Reporter tells /1.0/events, the log and the governor's webhook what the engine did.
type Reporter interface {
	// Send sends a lifecycle event, naming who asked for the change.
	Send(by api.DeploymentRequestor, deploymentID int64, event reporter.Event)

	// RolloutEvent reports a rollout's step, and counts a rollout that ended.
	RolloutEvent(by api.DeploymentRequestor, ref refs.ShapeRef, deploymentID int64, number int, action reporter.RolloutAction)
}
