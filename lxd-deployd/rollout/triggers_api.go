package rollout

import (
	"context"
	"database/sql"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// SwitchDeploymentTriggers is POST /1.0/deployments/{deployment}/triggers/{action}:
// suspend or resume every trigger of the deployment (resume also resumes every shape a
// rollback suspended, and answers their new revisions by shape).
func SwitchDeploymentTriggers(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, action string, by api.DeploymentRequestor, notes string) (int64, map[string]Revised, error) {
	var deploymentID int64
	var revised map[string]Revised
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		deploymentID, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		switch action {
		case "suspend":
			return SuspendDeploymentTriggers(ctx, tx, deploymentID, ref.Name, by, notes)
		case "resume":
			revised, err = ResumeDeploymentTriggers(ctx, tx, deploymentID, ref.Name, by, notes)
			return err
		}

		return lxdapi.StatusErrorf(http.StatusNotFound, "unknown action %q: suspend or resume", action)
	})

	return deploymentID, revised, err
}

// ResumeShape is POST .../shapes/{shape}/triggers/resume: a shape's triggers a rollback
// suspended are resumed (ResumeShapeTriggers).
func ResumeShape(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef, by api.DeploymentRequestor, notes string) (int64, Revised, error) {
	var deploymentID int64
	var out Revised
	err := refs.InShapeTx(ctx, cluster, ref, func(ctx context.Context, tx *sql.Tx, id int64, shape *db.Shape) (err error) {
		deploymentID = id
		if shape.TriggersSuspended == nil {
			return lxdapi.StatusErrorf(http.StatusConflict, "the triggers of shape %s are not suspended: nothing to resume (the deployment's switch is POST /1.0/deployments/%s/triggers/resume)", ref.Shape, ref.Name)
		}

		out, err = ResumeShapeTriggers(ctx, tx, shape, by, notes)
		return err
	})

	return deploymentID, out, err
}
