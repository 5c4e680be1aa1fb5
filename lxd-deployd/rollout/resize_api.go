package rollout

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Resize checks a resize (PUT .../shapes/{shape}/resources) against the shape's
// resource_bounds and stores it, with its revision (cause resize), in the caller's
// transaction: the check and the write cannot be split by another change, as the
// horizontal bound check in the reservation. admin says the caller is an admin, who may
// resize a limit the shape does not bound (shapes.Resize). It returns what the resize
// operation applies (fleet.Resizer) and the revision.
func Resize(ctx context.Context, tx *sql.Tx, ref refs.ShapeRef, req api.DeploymentShapeResourcesPut, by api.DeploymentRequestor, admin bool) (fleet.ResizeTarget, int, error) {
	deploymentID, shape, err := refs.ShapeInTx(ctx, tx, ref)
	if err != nil {
		return fleet.ResizeTarget{}, 0, err
	}

	put, err := shapes.Resize(shape.Writable(), req, !admin)
	if err != nil {
		return fleet.ResizeTarget{}, 0, err
	}

	err = validate.Shape(put)
	if err != nil {
		return fleet.ResizeTarget{}, 0, badRequest(err)
	}

	err = db.UpdateShape(ctx, tx, shape.ID, put)
	if err != nil {
		return fleet.ResizeTarget{}, 0, err
	}

	notes := req.Reason
	if notes == "" {
		notes = describeResize(req)
	}

	revised, err := RecordRevision(ctx, tx, deploymentID, shape.ID, shape, put, RevisionArgs{Cause: CauseResize, By: by, Notes: notes, Always: true, InPlace: true})
	if err != nil {
		return fleet.ResizeTarget{}, 0, err
	}

	by, err = fleet.WithKey(ctx, tx, by, deploymentID)
	if err != nil {
		return fleet.ResizeTarget{}, 0, err
	}

	// As many at once as a rolling rollout may have unavailable (at least one): an update
	// in place keeps instances serving, so this paces LXD, not availability.
	batch := 1
	resolved, err := shapes.ResolveRollout(put.Rollout, shape.ScalingCurrent)
	if err == nil {
		batch = max(1, resolved.Unavailable)
	}

	return fleet.ResizeTarget{DeploymentID: deploymentID, ShapeID: shape.ID, Project: ref.Project, Shape: shape.Name, By: by, Batch: batch}, revised.Revision, nil
}

// StoreResize is Resize in a transaction of its own.
func StoreResize(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef, req api.DeploymentShapeResourcesPut, by api.DeploymentRequestor, admin bool) (target fleet.ResizeTarget, revision int, err error) {
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		target, revision, err = Resize(ctx, tx, ref, req, by, admin)
		return err
	})

	return target, revision, err
}

// describeResize writes a resize's limits for the activity log.
func describeResize(req api.DeploymentShapeResourcesPut) string {
	out := ""
	for _, key := range validate.ResourceKeys {
		if value, ok := req.Limits()[key]; ok {
			if out != "" {
				out += " "
			}

			out += key + "=" + value
		}
	}

	return out
}
