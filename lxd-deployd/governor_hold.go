package main

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor/holds"
)

// allowActiveGovernor guards the governor API's changes (launch, delete, state, resize,
// rebalance): allowDeploymentAdmin's rule, and while a governor holds the deployment only
// its certificate among deployment keys may act (hold.CheckActive). Admins always may.
func (a access) allowActiveGovernor(r *http.Request) error {
	err := a.allowDeploymentAdmin(r)
	if err != nil {
		return err
	}

	caller := auth.CallerFromContext(r.Context())
	if caller.IsAdmin() {
		return nil
	}

	ref, err := deploymentFromRequest(r)
	if err != nil {
		return err
	}

	return a.db.Read(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		return holds.CheckActive(ctx, tx, ref, caller.Fingerprint, time.Now())
	})
}
