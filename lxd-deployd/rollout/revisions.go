package rollout

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

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
	CauseAPI         = "api"
	CauseImageChange = shapes.CauseImageChange
	CauseConfig      = "config-change"
	CauseAutoRevert  = "auto-revert"
	CauseAbort       = "abort"
	CauseResize      = "resize"
)

// CauseApplyManifest is the cause of the revisions applying a manifest records.
func CauseApplyManifest(manifest string) string { return "apply " + manifest }

// CauseRollbackTo is the cause of the revision a rollback to revision records.
func CauseRollbackTo(revision int) string { return fmt.Sprintf("rollback to %d", revision) }

// defaultRevisionsKeep is the default of the deployment config key revisions.keep.
const defaultRevisionsKeep = 20

// RevisionArgs says why and by whom a shape changes.
type RevisionArgs struct {
	Cause string
	By    api.DeploymentRequestor
	Notes string

	// Always records a revision even when no writable field changed (a rollback moves
	// history forward either way).
	Always bool

	// Image says the alias of the template now names another image (the image-change
	// trigger): instances are outdated though no field changed.
	Image bool

	// ImageFingerprint is the image the alias now names, with Image.
	ImageFingerprint string

	// InPlace says the change reaches the instances in place (a resize and its operation):
	// no rollout starts, whatever the shape's trigger.
	InPlace bool

	// NoTrigger says the change fires no trigger (a rollback, which rolls out only when
	// asked, and the lifting of its pin).
	NoTrigger bool
}

// Revised is the outcome of RecordRevision.
type Revised struct {
	Revision int // the new revision, 0 when nothing changed
	Rollout  int // the rollout the shape's trigger started, 0 when none
}

// RecordRevision records a new revision of a shape whose writable fields went from before
// (nil for a new shape) to after, inside the transaction that stored after. When the
// template changed and the shape's trigger is config-change, it starts a rollout in the
// same transaction, so that a crash cannot keep the revision and lose the rollout.
func RecordRevision(ctx context.Context, tx *sql.Tx, deploymentID int64, shapeID int64, before *db.Shape, after api.DeploymentShapePut, args RevisionArgs) (Revised, error) {
	var out Revised
	previous := 0
	if before != nil {
		previous = before.Revision
		if !args.Always && !args.Image && len(shapes.Changes(before.Writable(), after)) == 0 {
			return out, nil
		}
	}

	by, err := fleet.WithKey(ctx, tx, args.By, deploymentID)
	if err != nil {
		return out, err
	}

	out.Revision = previous + 1
	now := time.Now()
	var beforePut *api.DeploymentShapePut
	beforeImage := ""
	if before != nil {
		put := before.Writable()
		beforePut, beforeImage = &put, before.ImageFingerprint
	}

	image := revisionImage(beforePut, beforeImage, after, args)
	err = db.CreateRevision(ctx, tx, shapeID, api.DeploymentShapeRevision{Revision: out.Revision, Shape: after, Cause: args.Cause, Requestor: by, Notes: args.Notes, CreatedAt: now, ImageFingerprint: image})
	if err != nil {
		return out, err
	}

	keep, err := fleet.DeploymentConfigInt(ctx, tx, deploymentID, "revisions.keep", defaultRevisionsKeep)
	if err != nil {
		return out, err
	}

	err = db.PruneRevisions(ctx, tx, shapeID, keep, CauseResize)
	if err != nil {
		return out, err
	}

	shape, err := ShapeByID(ctx, tx, deploymentID, shapeID)
	if err != nil {
		return out, err
	}

	why := args.Cause
	if args.Notes != "" {
		why += ": " + args.Notes
	}

	err = fleet.RecordActivity(ctx, tx, deploymentID, api.DeploymentActivity{Shape: shape.Name, Action: "revision", From: previous, To: out.Revision, Requestor: by, Why: why})
	if err != nil {
		return out, err
	}

	if !args.Image {
		err = relabelEquivalent(ctx, tx, shapeID, out.Revision, after, image)
		if err != nil {
			return out, err
		}
	}

	templateChanged := before == nil || args.Image || shapes.TemplateChanged(before.Writable(), after)
	fires, _ := after.Rollout.TriggerOf(api.RolloutTriggerConfigChange)
	cause := CauseConfig
	if args.Image {
		// A non-automatic image trigger records the revision only.
		_, fires = after.Rollout.TriggerOf(api.RolloutTriggerImageChange)
		cause = CauseImageChange
	}

	if before == nil || !templateChanged || !fires || args.InPlace {
		return out, nil
	}

	if args.NoTrigger {
		return out, nil
	}

	suspended, err := deploymentSuspended(ctx, tx, deploymentID)
	if err != nil || suspended {
		return out, err
	}

	out.Rollout, err = Start(ctx, tx, shape, cause, by, args.Notes, false, false)
	return out, err
}

// ShapeByID reads a shape of a deployment by id.
func ShapeByID(ctx context.Context, tx *sql.Tx, deploymentID int64, shapeID int64) (*db.Shape, error) {
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
// revision: they are not outdated, and a rollout would replace them for nothing. The
// images count: a rollback past an image change leaves the new image's instances outdated.
func relabelEquivalent(ctx context.Context, tx *sql.Tx, shapeID int64, revision int, after api.DeploymentShapePut, image string) error {
	revisions, err := db.GetRevisions(ctx, tx, shapeID, 0)
	if err != nil {
		return err
	}

	for _, r := range revisions {
		if r.Revision == revision || r.Instances == 0 || !sameInstances(r.Shape, r.ImageFingerprint, after, image) {
			continue
		}

		err = db.SetInstancesRevision(ctx, tx, shapeID, r.Revision, revision)
		if err != nil {
			return err
		}
	}

	return nil
}

// RollbackShape sets a shape's writable fields back to those of an earlier revision, in the
// caller's transaction, and records the new revision. template restores everything but the
// bounds (instance template, config, description, rollout settings), with the image the
// revision recorded pinned (PinnedTemplate), scaling the bounds. It fires no trigger, and
// a template rollback suspends the shape's image triggers (suspendAfterRollback).
func RollbackShape(ctx context.Context, tx *sql.Tx, shape *db.Shape, revision int, template bool, scaling bool, args RevisionArgs) (*db.Shape, Revised, error) {
	old, err := db.GetRevision(ctx, tx, shape.ID, revision)
	if err != nil {
		return nil, Revised{}, err
	}

	put := shape.Writable()
	if template {
		put.Description, put.Config, put.InstanceTemplate, put.Rollout = old.Shape.Description, old.Shape.Config, PinnedTemplate(*old), old.Shape.Rollout
	}

	if scaling {
		put.ScalingMinimum, put.ScalingMaximum = old.Shape.ScalingMinimum, old.Shape.ScalingMaximum
	}

	err = validate.Shape(put)
	if err != nil {
		return nil, Revised{}, lxdapi.StatusErrorf(http.StatusBadRequest, "revision %d no longer makes a valid shape: %v", revision, err)
	}

	err = db.UpdateShape(ctx, tx, shape.ID, put)
	if err != nil {
		return nil, Revised{}, err
	}

	// The shape now runs the pinned image: what its alias last named, as far as the image
	// trigger is concerned once the pin is lifted (ResumeTriggers), so that an alias still
	// naming the image rolled back from is an image change again.
	pinned := put.InstanceTemplate.Source.Fingerprint
	if template && pinned != "" && pinned != shape.ImageFingerprint && localAlias(old.Shape.InstanceTemplate.Source) {
		err = db.SetShapeImageFingerprint(ctx, tx, shape.ID, shape.ImageFingerprint, pinned)
		if err != nil {
			return nil, Revised{}, err
		}
	}

	args.NoTrigger = true
	out, err := RecordRevision(ctx, tx, shape.DeploymentID, shape.ID, shape, put, args)
	if err != nil {
		return nil, out, err
	}

	if template {
		err = suspendAfterRollback(ctx, tx, shape, put, revision, args.By)
		if err != nil {
			return nil, out, err
		}
	}

	after, err := ShapeByID(ctx, tx, shape.DeploymentID, shape.ID)
	return after, out, err
}
