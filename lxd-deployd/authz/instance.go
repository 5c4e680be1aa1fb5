package authz

import (
	"context"
	"database/sql"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
)

// OwnInstance is the rule for an action on one instance (continue, abandon or heartbeat of
// its lifecycle hook, a health report): a deployment admin, or a governor inside that very
// instance; may says what the refused one may do. Admins and admin keys over TLS act on
// every instance of the deployment; a governor inside an instance (a JWT over its socket or
// vsock) only on its own: the transport, not the token, says which instance that is.
// Otherwise any instance holding an admin key's token could cut short another's drain.
func (c Checker) OwnInstance(ctx context.Context, caller *auth.Caller, req Request, may string) error {
	err := c.DeploymentAdmin(ctx, caller, req)
	if err != nil {
		return err
	}

	if caller.Protocol != auth.ProtocolGovernor {
		return nil
	}

	ref, err := req.Instance()
	if err != nil {
		return err
	}

	refused := forbidden("a governor inside instance %q may %s, not %q's: ask an admin, or a governor holding a key over HTTPS", caller.Instance, may, ref.Instance)
	if caller.Instance == "" || caller.Instance != ref.Instance {
		return refused
	}

	// Same name is not enough: another project may hold an instance of that name.
	return c.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{DeploymentID: deploymentID, Name: ref.Instance})
		if err != nil {
			return err
		}

		for _, row := range rows {
			if row.Project == caller.InstanceProject {
				return nil
			}
		}

		return refused
	})
}
