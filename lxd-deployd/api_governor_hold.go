package main

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor/holds"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// governorHoldAPI serves /1.0/deployments/{deployment}/governor: which governor is the
// deployment's active one (package governor/holds has the rules).
type governorHoldAPI struct {
	db *db.Cluster
}

// governorView is a hold as the API shows it: the zero object when nobody holds it.
func governorView(hold *db.GovernorHold, valid bool, now time.Time) api.DeploymentGovernor {
	if !valid || !hold.ActiveAt(now) {
		return api.DeploymentGovernor{}
	}

	return api.DeploymentGovernor{Name: hold.Governor, Key: hold.KeyName, CertificateFingerprint: hold.Fingerprint, Since: hold.Since.UTC(), RenewedAt: hold.RenewedAt.UTC(), ExpiresAt: hold.ExpiresAt.UTC()}
}

// inDeployment runs f in a transaction with the request's deployment and its id.
func (a governorHoldAPI) inDeployment(r *http.Request, f func(ctx context.Context, tx *sql.Tx, ref refs.DeploymentRef, id int64) error) error {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return err
	}

	return a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		return f(ctx, tx, ref, id)
	})
}

func (a governorHoldAPI) get(r *http.Request) response.Response {
	var view api.DeploymentGovernor
	err := a.inDeployment(r, func(ctx context.Context, tx *sql.Tx, ref refs.DeploymentRef, id int64) error {
		hold, valid, err := holds.Read(ctx, tx, ref, id)
		view = governorView(hold, valid, time.Now())
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(view)
}

// put registers the caller as the deployment's governor, or renews its hold.
func (a governorHoldAPI) put(r *http.Request) response.Response {
	var req api.DeploymentGovernorPut
	err := rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	req, err = validate.GovernorRegistration(req)
	if err != nil {
		return response.SmartError(rest.BadRequest(err))
	}

	caller := auth.CallerFromContext(r.Context())
	var view api.DeploymentGovernor
	err = a.inDeployment(r, func(ctx context.Context, tx *sql.Tx, ref refs.DeploymentRef, id int64) error {
		claim := db.GovernorHold{DeploymentID: id, Fingerprint: caller.Fingerprint, Governor: req.Name}
		if !caller.IsAdmin() {
			_, keyName, err := db.GetCertificateRole(ctx, tx, caller.Fingerprint, ref.Project, ref.Name)
			if err != nil {
				return err
			}

			claim.KeyName = keyName
		}

		current, valid, err := holds.Read(ctx, tx, ref, id)
		if err != nil {
			return err
		}

		now := time.Now()
		next, err := holds.Claim(ref, current, valid, claim, req.Takeover, now, time.Duration(req.TTL)*time.Second)
		if err != nil {
			return err
		}

		err = db.PutGovernorHold(ctx, tx, next)
		view = governorView(&next, true, now)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(view)
}

// delete releases the hold: a governor its own (?name= names it, as registered), an admin
// anyone's. Releasing a deployment nobody holds changes nothing.
func (a governorHoldAPI) delete(r *http.Request) response.Response {
	caller := auth.CallerFromContext(r.Context())
	name := r.URL.Query().Get("name")
	err := a.inDeployment(r, func(ctx context.Context, tx *sql.Tx, ref refs.DeploymentRef, id int64) error {
		hold, valid, err := holds.Read(ctx, tx, ref, id)
		if err != nil {
			return err
		}

		if hold == nil {
			return nil
		}

		mine := hold.Fingerprint == caller.Fingerprint && (name == "" || name == hold.Governor)
		if !caller.IsAdmin() && !mine && valid && hold.ActiveAt(time.Now()) {
			return lxdapi.StatusErrorf(http.StatusConflict, "%s: a governor releases only its own hold; an admin may release any", holds.GovernedBy(ref, hold))
		}

		return db.DeleteGovernorHold(ctx, tx, id)
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.EmptySyncResponse()
}
