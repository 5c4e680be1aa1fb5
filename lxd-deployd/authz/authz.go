// Package authz decides who may do what: the access checks that the route table and the
// handlers run on a caller package auth has authenticated. A deployments certificate acts
// only through the deployment keys bound to its fingerprint (seed 004); keys are read on
// every request, so deleting a key or its certificate revokes access at once.
package authz

import (
	"context"
	"database/sql"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Request is what the checks read of a request's path. Each name is parsed only when a
// check needs it, so that a caller refused for who it is gets that answer, not one about
// the path.
type Request interface {
	// Deployment is the deployment the path names, or the error that says why not.
	Deployment() (refs.DeploymentRef, error)

	// Shape is the shape the path names, "" when none (or not a valid name).
	Shape() string

	// Instance is the instance the path names, or the error that says why not.
	Instance() (refs.InstanceRef, error)
}

// Checker runs the access checks that read deployment keys and instances.
type Checker struct {
	DB *db.Cluster
}

// forbidden is a 403 naming what the caller lacks.
func forbidden(format string, a ...any) error {
	return lxdapi.StatusErrorf(http.StatusForbidden, format, a...)
}

// DeploymentRead lets admins through, and deployments certificates holding any key of the
// deployment the request names.
func (c Checker) DeploymentRead(ctx context.Context, caller *auth.Caller, req Request) error {
	_, err := c.DeploymentRole(ctx, caller, req, "read")
	return err
}

// DeploymentAdmin lets admins through, and deployments certificates holding an admin key
// of the deployment the request names.
func (c Checker) DeploymentAdmin(ctx context.Context, caller *auth.Caller, req Request) error {
	role, err := c.DeploymentRole(ctx, caller, req, "change instances of")
	if err != nil {
		return err
	}

	if role != api.DeploymentKeyRoleAdmin {
		return forbidden("this certificate's key on the deployment is read-only: instance changes need a key with role admin")
	}

	return nil
}

// DeploymentRole returns the caller's role on the deployment in the request path: admin
// for admins, the key's role for deployments certificates, or a 403 that says what is
// missing (what names the refused action). An unknown deployment is a 403 too, so that
// existence does not leak.
func (c Checker) DeploymentRole(ctx context.Context, caller *auth.Caller, req Request, what string) (string, error) {
	if caller.IsAdmin() {
		return api.DeploymentKeyRoleAdmin, nil
	}

	if !caller.Trusted {
		return "", forbidden("not trusted: use a client certificate, or a deployments certificate bound to a deployment key")
	}

	if caller.CertificateType == auth.CertificateTypeDeployer {
		return deployerRole(caller, req)
	}

	if caller.CertificateType != api.CertificateTypeDeployments {
		return "", forbidden("a %s certificate may not %s a deployment", caller.CertificateType, what)
	}

	ref, err := req.Deployment()
	if err != nil {
		return "", err
	}

	var role string
	err = c.DB.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if caller.Protocol == auth.ProtocolGovernor {
			err := CheckGovernorScope(ctx, tx, caller, ref, req.Shape())
			if err != nil {
				return err
			}
		}

		role, _, err = db.GetCertificateRole(ctx, tx, caller.Fingerprint, ref.Project, ref.Name)
		return err
	})
	if err != nil {
		return "", err
	}

	if role == "" {
		return "", forbidden("this certificate has no key on deployment %q in project %q: an admin must create one (lxd-deploy deployment key create)", ref.Name, ref.Project)
	}

	return role, nil
}

// AdminOn checks that the caller may change things in a deployment known by id.
func (c Checker) AdminOn(ctx context.Context, caller *auth.Caller, deploymentID int64) error {
	if caller.IsAdmin() {
		return nil
	}

	if caller.Trusted && caller.CertificateType == api.CertificateTypeDeployments && deploymentID != 0 {
		var keys []db.Key
		err := c.DB.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			keys, err = db.GetKeys(ctx, tx, db.KeyFilter{Fingerprint: caller.Fingerprint, DeploymentID: deploymentID})
			return err
		})
		if err != nil {
			return err
		}

		for _, k := range keys {
			if k.Role == api.DeploymentKeyRoleAdmin {
				return nil
			}
		}
	}

	return forbidden("changing this needs an admin, or an admin key on its deployment")
}
