package main

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// allowInstanceHook guards continue, abandon and heartbeat on an instance's lifecycle hook.
// Admins and admin keys over TLS control every hook of the deployment; a governor inside
// an instance (a JWT over its socket or vsock) may end or extend only its own instance's
// wait: the transport, not the token, says which instance that is. Otherwise any instance
// holding an admin key's token could cut short another's drain.
func (a access) allowInstanceHook(r *http.Request) error {
	return a.allowOwnInstance(r, "act only on its own lifecycle hook")
}

// allowOwnInstance is allowInstanceHook's rule for any action on one instance: a deployment
// admin, or a governor inside that very instance; may says what the refused one may do.
func (a access) allowOwnInstance(r *http.Request, may string) error {
	err := a.allowDeploymentAdmin(r)
	if err != nil {
		return err
	}

	caller := auth.CallerFromContext(r.Context())
	if caller.Protocol != auth.ProtocolGovernor {
		return nil
	}

	ref, err := instanceFromRequest(r)
	if err != nil {
		return err
	}

	refused := rest.Forbidden("a governor inside instance %q may %s, not %q's: ask an admin, or a governor holding a key over HTTPS", caller.Instance, may, ref.Instance)
	if caller.Instance == "" || caller.Instance != ref.Instance {
		return refused
	}

	// Same name is not enough: another project may hold an instance of that name.
	return a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
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
