package main

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Revisions (seed 002's history): every change of a shape's writable fields, by any path
// (the shapes API, a templated config, a rollback, the image-change trigger), records an
// immutable revision in the transaction that makes the change.

// Causes of revisions and rollouts.
const (
	causeAPI         = "api"
	causeImageChange = "image-change"
	causeConfig      = "config-change"
	causeAutoRevert  = "auto-revert"
	causeAbort       = "abort"
)

func causeApplyManifest(manifest string) string { return "apply " + manifest }
func causeRollbackTo(revision int) string       { return fmt.Sprintf("rollback to %d", revision) }

// defaultRevisionsKeep is the default of the deployment config key revisions.keep.
const defaultRevisionsKeep = 20

// revisionArgs says why and by whom a shape changes.
type revisionArgs struct {
	cause string
	by    api.DeploymentRequestor
	notes string

	// always records a revision even when no writable field changed (a rollback moves
	// history forward either way).
	always bool

	// image says the alias of the template now names another image (the image-change
	// trigger): instances are outdated though no field changed.
	image bool
}

// shapeRevised is the outcome of recordRevision.
type shapeRevised struct {
	revision int // the new revision, 0 when nothing changed
	rollout  int // the rollout the shape's trigger started, 0 when none
}

// recordRevision records a new revision of a shape whose writable fields went from before
// (nil for a new shape) to after, inside the transaction that stored after. When the
// template changed and the shape's trigger is config-change, it starts a rollout in the
// same transaction, so that a crash cannot keep the revision and lose the rollout.
func recordRevision(ctx context.Context, tx *sql.Tx, deploymentID int64, shapeID int64, before *db.Shape, after api.DeploymentShapePut, args revisionArgs) (shapeRevised, error) {
	var out shapeRevised
	previous := 0
	if before != nil {
		previous = before.Revision
		if !args.always && !args.image && len(shapes.Changes(before.Writable(), after)) == 0 {
			return out, nil
		}
	}

	by, err := fleet.WithKey(ctx, tx, args.by, deploymentID)
	if err != nil {
		return out, err
	}

	out.revision = previous + 1
	now := time.Now()
	err = db.CreateRevision(ctx, tx, shapeID, api.DeploymentShapeRevision{Revision: out.revision, Shape: after, Cause: args.cause, Requestor: by, Notes: args.notes, CreatedAt: now})
	if err != nil {
		return out, err
	}

	keep, err := fleet.DeploymentConfigInt(ctx, tx, deploymentID, "revisions.keep", defaultRevisionsKeep)
	if err != nil {
		return out, err
	}

	err = db.PruneRevisions(ctx, tx, shapeID, keep)
	if err != nil {
		return out, err
	}

	shape, err := shapeByID(ctx, tx, deploymentID, shapeID)
	if err != nil {
		return out, err
	}

	why := args.cause
	if args.notes != "" {
		why += ": " + args.notes
	}

	err = fleet.RecordActivity(ctx, tx, deploymentID, api.DeploymentActivity{Shape: shape.Name, Action: "revision", From: previous, To: out.revision, Requestor: by, Why: why})
	if err != nil {
		return out, err
	}

	if !args.image {
		err = relabelEquivalent(ctx, tx, shapeID, out.revision, after)
		if err != nil {
			return out, err
		}
	}

	templateChanged := before == nil || args.image || shapes.TemplateChanged(before.Writable(), after)
	trigger := api.RolloutTriggerConfigChange
	cause := causeConfig
	if args.image {
		trigger, cause = api.RolloutTriggerImageChange, causeImageChange
	}

	if before == nil || !templateChanged || after.Rollout.Trigger != trigger {
		return out, nil
	}

	out.rollout, err = createRollout(ctx, tx, shape, cause, by, args.notes, false, false)
	return out, err
}

// shapeByID reads a shape of a deployment by id.
func shapeByID(ctx context.Context, tx *sql.Tx, deploymentID int64, shapeID int64) (*db.Shape, error) {
	all, err := db.GetShapes(ctx, tx, db.ShapeFilter{DeploymentID: deploymentID})
	if err != nil {
		return nil, err
	}

	for i := range all {
		if all[i].ID == shapeID {
			return &all[i], nil
		}
	}

	return nil, fmt.Errorf("shape %d is gone", shapeID)
}

// relabelEquivalent moves instances made from a revision that makes the same instances as
// the new one (a bounds or description change, a rollback to what they run) to the new
// revision: they are not outdated, and a rollout would replace them for nothing.
func relabelEquivalent(ctx context.Context, tx *sql.Tx, shapeID int64, revision int, after api.DeploymentShapePut) error {
	revisions, err := db.GetRevisions(ctx, tx, shapeID, 0)
	if err != nil {
		return err
	}

	for _, r := range revisions {
		if r.Revision == revision || r.Instances == 0 || shapes.TemplateChanged(r.Shape, after) {
			continue
		}

		err = db.SetInstancesRevision(ctx, tx, shapeID, r.Revision, revision)
		if err != nil {
			return err
		}
	}

	return nil
}

// rollbackShape sets a shape's writable fields back to those of an earlier revision, in the
// caller's transaction, and records the new revision. template restores everything but the
// bounds (instance template, config, description, rollout settings), scaling the bounds.
func rollbackShape(ctx context.Context, tx *sql.Tx, shape *db.Shape, revision int, template bool, scaling bool, args revisionArgs) (*db.Shape, shapeRevised, error) {
	old, err := db.GetRevision(ctx, tx, shape.ID, revision)
	if err != nil {
		return nil, shapeRevised{}, err
	}

	put := shape.Writable()
	if template {
		put.Description, put.Config, put.InstanceTemplate, put.Rollout = old.Shape.Description, old.Shape.Config, old.Shape.InstanceTemplate, old.Shape.Rollout
	}

	if scaling {
		put.ScalingMinimum, put.ScalingMaximum = old.Shape.ScalingMinimum, old.Shape.ScalingMaximum
	}

	err = validate.Shape(put)
	if err != nil {
		return nil, shapeRevised{}, badRequest(fmt.Errorf("revision %d no longer makes a valid shape: %w", revision, err))
	}

	err = db.UpdateShape(ctx, tx, shape.ID, put)
	if err != nil {
		return nil, shapeRevised{}, err
	}

	out, err := recordRevision(ctx, tx, shape.DeploymentID, shape.ID, shape, put, args)
	if err != nil {
		return nil, out, err
	}

	after, err := shapeByID(ctx, tx, shape.DeploymentID, shape.ID)
	return after, out, err
}
