package fleet

import (
	"context"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// instanceOperation runs the LXD half of a reserved launch or delete (finish) as a
// background operation. It cannot be cancelled half way: that left unrecorded instances
// behind, or records of instances LXD no longer has.
func (f *Fleet) instanceOperation(ctx context.Context, ref refs.InstanceRef, deploymentID int64, verb string, finish func(ctx context.Context) error) *operations.Operation {
	return f.ops.Start(operations.Args{
		Description:   fmt.Sprintf("%s instance %s of shape %s", verb, ref.Instance, ref.Shape),
		Project:       ref.Project,
		DeploymentID:  deploymentID,
		Resources:     InstanceResources(ref),
		Uncancellable: true,
		Logger:        f.requestLogger(ctx),
		Run: func(ctx context.Context, op *operations.Operation) error {
			return finish(ctx)
		},
	})
}

// InstanceResources lists what an instance operation touches, as LXD does.
func InstanceResources(ref refs.InstanceRef) map[string][]string {
	return map[string][]string{
		"instances":         {api.InstanceURL(ref.Project, ref.Instance)},
		"deployment_shapes": {api.DeploymentShapeURL(ref.Project, ref.Name, ref.Shape)},
	}
}
