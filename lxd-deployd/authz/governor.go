package authz

import (
	"context"
	"database/sql"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
)

// ConfigGovernorExternal is the shape config key that lets governors from instances
// outside the deployment act on the shape (then only the token counts).
const ConfigGovernorExternal = "governor.external"

// CheckGovernorScope holds a governor's request to the one deployment its token is for, and
// to governors running inside that deployment, unless the shape lets external ones in.
func CheckGovernorScope(ctx context.Context, tx *sql.Tx, caller *auth.Caller, ref refs.DeploymentRef, shape string) error {
	if caller.Audience != auth.TokenAudience(ref.Project, ref.Name) {
		return forbidden("this token is for %s, not deployment %q in project %q: sign one with that audience", strings.TrimPrefix(caller.Audience, auth.TokenAudiencePrefix), ref.Name, ref.Project)
	}

	deploymentID, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
	if err != nil {
		return err
	}

	member, err := db.GetInstances(ctx, tx, db.InstanceFilter{DeploymentID: deploymentID, Name: caller.Instance})
	if err != nil {
		return err
	}

	for _, row := range member {
		if row.Project == caller.InstanceProject {
			return nil
		}
	}

	shapes, err := db.GetShapes(ctx, tx, db.ShapeFilter{DeploymentID: deploymentID, Name: shape})
	if err != nil {
		return err
	}

	for _, s := range shapes {
		if s.Config[ConfigGovernorExternal] == "true" {
			return nil
		}
	}

	return forbidden("instance %q is not a member of deployment %q: governors act on their own deployment unless a shape sets %s=true", caller.Instance, ref.Name, ConfigGovernorExternal)
}
