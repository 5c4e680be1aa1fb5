package rollout

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Suspended triggers (seed 002: "rollback is meant to be a temporary fix ... all
// deployment triggers will be retained but suspended", and a deployment-wide kill switch).
// A rollback suspends its shape's image triggers: a new image under the alias makes no
// revision and no rollout until they are resumed. The deployment's switch suspends every
// trigger of every shape, config-change included. Either way the triggers stay as
// configured, so resuming is one call that needs no memory of what they were.

// CauseTriggersResumed is the cause of the revision that lifts a rollback's image pin.
const CauseTriggersResumed = "triggers resumed"

// deploymentSuspended says whether the deployment's kill switch is on: no trigger
// starts a rollout.
func deploymentSuspended(ctx context.Context, tx *sql.Tx, deploymentID int64) (bool, error) {
	s, err := db.GetDeploymentTriggersSuspended(ctx, tx, deploymentID)
	return s != nil, err
}

// ImageTriggerSuspended says whether the image trigger leaves a shape alone: its own
// triggers are suspended (a rollback), or its deployment's.
func ImageTriggerSuspended(shape *db.Shape, deployment *api.DeploymentTriggersSuspended) bool {
	return shape.TriggersSuspended != nil || deployment != nil
}

// suspendAfterRollback suspends a shape's image triggers after a rollback to revision,
// recording the image the rollback pinned, when the shape has image triggers to suspend.
func suspendAfterRollback(ctx context.Context, tx *sql.Tx, shape *db.Shape, after api.DeploymentShapePut, revision int, by api.DeploymentRequestor) error {
	if has, _ := after.Rollout.TriggerOf(api.RolloutTriggerImageChange); !has {
		return nil
	}

	s := &api.DeploymentTriggersSuspended{Since: time.Now().UTC(), Requestor: by, Reason: CauseRollbackTo(revision)}
	if localAliasPinned(after.InstanceTemplate.Source) {
		s.Image = after.InstanceTemplate.Source.Fingerprint
	}

	return db.SetShapeTriggersSuspended(ctx, tx, shape.ID, s)
}

// localAliasPinned says a source names an alias of the daemon's LXD with a fingerprint.
func localAliasPinned(source lxdapi.InstanceSource) bool {
	return source.Type == "image" && source.Alias != "" && source.Fingerprint != "" && source.Server == ""
}

// ResumeShapeTriggers resumes a shape's suspended triggers in the caller's transaction.
// When the rollback that suspended them pinned an image that the template still pins, the
// pin is lifted in a new revision (the alias is followed again; the instances of the
// pinned image stay current, and the image trigger then sees whether the alias names
// another image). It returns that revision, or 0.
func ResumeShapeTriggers(ctx context.Context, tx *sql.Tx, shape *db.Shape, by api.DeploymentRequestor, notes string) (Revised, error) {
	suspended := shape.TriggersSuspended
	if suspended == nil {
		return Revised{}, nil
	}

	err := db.SetShapeTriggersSuspended(ctx, tx, shape.ID, nil)
	if err != nil {
		return Revised{}, err
	}

	why := "resumed (suspended by " + suspended.Reason + ")"
	if notes != "" {
		why += ": " + notes
	}

	err = fleet.RecordActivity(ctx, tx, shape.DeploymentID, api.DeploymentActivity{Shape: shape.Name, Action: "triggers-resumed", Requestor: by, Why: why})
	if err != nil {
		return Revised{}, err
	}

	source := shape.InstanceTemplate.Source
	if suspended.Image == "" || !localAliasPinned(source) || source.Fingerprint != suspended.Image {
		return Revised{}, nil
	}

	put := shape.Writable()
	put.InstanceTemplate.Source.Fingerprint = ""
	err = db.UpdateShape(ctx, tx, shape.ID, put)
	if err != nil {
		return Revised{}, err
	}

	return RecordRevision(ctx, tx, shape.DeploymentID, shape.ID, shape, put, RevisionArgs{Cause: CauseTriggersResumed, By: by, Notes: notes, NoTrigger: true})
}

// SuspendDeploymentTriggers turns a deployment's kill switch on; a 409 when it is on.
func SuspendDeploymentTriggers(ctx context.Context, tx *sql.Tx, deploymentID int64, name string, by api.DeploymentRequestor, notes string) error {
	current, err := db.GetDeploymentTriggersSuspended(ctx, tx, deploymentID)
	if err != nil {
		return err
	}

	if current != nil {
		return lxdapi.StatusErrorf(http.StatusConflict, "the triggers of deployment %s are suspended already (since %s, by %s): resume them with POST .../triggers/resume", name, current.Since.Format(time.RFC3339), current.Requestor.String())
	}

	reason := notes
	if reason == "" {
		reason = "suspended by request"
	}

	err = db.SetDeploymentTriggersSuspended(ctx, tx, deploymentID, &api.DeploymentTriggersSuspended{Since: time.Now().UTC(), Requestor: by, Reason: reason})
	if err != nil {
		return err
	}

	return fleet.RecordActivity(ctx, tx, deploymentID, api.DeploymentActivity{Action: "triggers-suspended", Requestor: by, Why: reason})
}

// ResumeDeploymentTriggers turns a deployment's kill switch off and resumes every shape's
// suspended triggers (ResumeShapeTriggers): one call undoes every suspension. It returns
// the revisions made per shape name; a 409 when nothing was suspended.
func ResumeDeploymentTriggers(ctx context.Context, tx *sql.Tx, deploymentID int64, name string, by api.DeploymentRequestor, notes string) (map[string]Revised, error) {
	current, err := db.GetDeploymentTriggersSuspended(ctx, tx, deploymentID)
	if err != nil {
		return nil, err
	}

	all, err := db.GetShapes(ctx, tx, db.ShapeFilter{DeploymentID: deploymentID})
	if err != nil {
		return nil, err
	}

	revised := map[string]Revised{}
	for i := range all {
		if all[i].TriggersSuspended == nil {
			continue
		}

		revised[all[i].Name], err = ResumeShapeTriggers(ctx, tx, &all[i], by, notes)
		if err != nil {
			return nil, err
		}
	}

	if current == nil && len(revised) == 0 {
		return nil, lxdapi.StatusErrorf(http.StatusConflict, "no trigger of deployment %s is suspended: nothing to resume", name)
	}

	if current != nil {
		err = db.SetDeploymentTriggersSuspended(ctx, tx, deploymentID, nil)
		if err != nil {
			return nil, err
		}

		why := "resumed (suspended: " + current.Reason + ")"
		if notes != "" {
			why += ": " + notes
		}

		err = fleet.RecordActivity(ctx, tx, deploymentID, api.DeploymentActivity{Action: "triggers-resumed", Requestor: by, Why: why})
		if err != nil {
			return nil, err
		}
	}

	return revised, nil
}
