package fleet

import (
	"context"
	"fmt"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// StartResize starts the operation that applies a stored resize (PUT .../resources, its
// revision) live to the shape's running instances (Resizer). What the operation leaves
// refused is the in-place pass's from then on: it is poked once the operation has ended
// (while it runs, the pass leaves the shape to it).
func (k *InPlaceKeeper) StartResize(ref refs.ShapeRef, target ResizeTarget, revision int, by api.DeploymentRequestor) *operations.Operation {
	resizer := Resizer{DB: k.db, Conn: k.client, Resized: func(row db.Instance, result api.DeploymentResizeResult) {
		k.reportResize(by, ref, target.DeploymentID, row, result)
	}}

	op := k.ops.Start(operations.Args{
		Description:  fmt.Sprintf("Resizing shape %s (revision %d)", ref.Shape, revision),
		Project:      ref.Project,
		DeploymentID: target.DeploymentID,
		Resources:    map[string][]string{"deployment_shapes": {api.DeploymentShapeURL(ref.Project, ref.Name, ref.Shape)}},
		Run: func(ctx context.Context, op *operations.Operation) error {
			_, err := resizer.Run(ctx, target, func(results map[string]api.DeploymentResizeResult, round int) {
				copied := make(map[string]api.DeploymentResizeResult, len(results))
				for name, result := range results {
					copied[name] = result
				}

				op.SetMetadata(map[string]any{"revision": revision, "round": round, "instances": copied})
			})
			return err
		},
	})

	go func() {
		op.Wait(context.Background(), -1)
		k.Poke()
	}()

	return op
}

// reportResize says what a resize (an operation's, or the pass's) did to one instance:
// /1.0/metrics, /1.0/events and the governor's webhook (with the reason).
func (k *InPlaceKeeper) reportResize(by api.DeploymentRequestor, ref refs.ShapeRef, deploymentID int64, row db.Instance, result api.DeploymentResizeResult) {
	action := reporter.InstanceResized
	if result.Result != api.ResizeApplied {
		action = reporter.InstanceResizeRefused
	}

	if k.resized != nil {
		k.resized(ref.Project, ref.Name, ref.Shape, result.Result)
	}

	k.reporter.Send(by, deploymentID, action.Event(refs.InstanceRef{ShapeRef: ref, Instance: row.Name}, nil))
	k.reporter.Notify(context.Background(), deploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(action), Shape: ref.Shape, Instance: row.Name, Reason: result.Reason})
}
