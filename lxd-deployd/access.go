package main

import (
	"context"
	"database/sql"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// access holds the access checks that depend on deployment keys: a deployments
// certificate acts only through the keys bound to its fingerprint (seed 004). Keys are read
// on every request, so deleting a key or its certificate revokes access at once.
type access struct {
	db *db.Cluster
}

// allowDeploymentRead lets admins through, and deployments certificates holding any key of
// the deployment the request names.
func (a access) allowDeploymentRead(r *http.Request) error {
	_, err := a.deploymentRole(r, "read")
	return err
}

// allowDeploymentAdmin lets admins through, and deployments certificates holding an admin
// key of the deployment the request names.
func (a access) allowDeploymentAdmin(r *http.Request) error {
	role, err := a.deploymentRole(r, "change instances of")
	if err != nil {
		return err
	}

	if role != api.DeploymentKeyRoleAdmin {
		return forbidden("this certificate's key on the deployment is read-only: instance changes need a key with role admin")
	}

	return nil
}

// deploymentRole returns the caller's role on the deployment in the request path: admin
// for admins, the key's role for deployments certificates, or a 403 that says what is
// missing. An unknown deployment is a 403 too, so that existence does not leak.
func (a access) deploymentRole(r *http.Request, what string) (string, error) {
	caller := auth.CallerFromContext(r.Context())
	if caller.IsAdmin() {
		return api.DeploymentKeyRoleAdmin, nil
	}

	if !caller.Trusted {
		return "", forbidden("not trusted: use a client certificate, or a deployments certificate bound to a deployment key")
	}

	if caller.CertificateType == auth.CertificateTypeDeployer {
		return deployerRole(r, caller)
	}

	if caller.CertificateType != api.CertificateTypeDeployments {
		return "", forbidden("a %s certificate may not %s a deployment", caller.CertificateType, what)
	}

	ref, err := deploymentFromRequest(r)
	if err != nil {
		return "", err
	}

	var role string
	err = a.db.Read(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		if caller.Protocol == auth.ProtocolGovernor {
			shape, _ := pathName(r, "shape", "shape")
			err := checkGovernorScope(ctx, tx, caller, ref, shape)
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

// filter returns what events and operations the caller may see: everything for admins,
// the deployments it holds keys on for deployments certificates (re-read every second so
// revocation reaches open event streams), nothing otherwise.
func (a access) filter(caller *auth.Caller) events.Filter {
	if caller.IsAdmin() {
		return func(int64) bool { return true }
	}

	if caller.Trusted && caller.CertificateType == auth.CertificateTypeDeployer {
		id := deployerDeployment(context.Background(), a.db, caller)
		return func(deploymentID int64) bool { return deploymentID != 0 && deploymentID == id }
	}

	if !caller.Trusted || caller.CertificateType != api.CertificateTypeDeployments {
		return func(int64) bool { return false }
	}

	var mu sync.Mutex
	var allowed map[int64]bool
	var readAt time.Time
	return func(deploymentID int64) bool {
		mu.Lock()
		defer mu.Unlock()
		if time.Since(readAt) > time.Second {
			allowed = map[int64]bool{}
			readAt = time.Now()
			_ = a.db.Read(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
				keys, err := db.GetKeys(ctx, tx, db.KeyFilter{Fingerprint: caller.Fingerprint})
				if err != nil {
					return err
				}

				audienceID := int64(0)
				if caller.Audience != "" {
					// A governor token is good for one deployment only, and only from
					// inside it (unless a shape lets outsiders in), as on the other routes.
					project, name, _ := strings.Cut(strings.TrimPrefix(caller.Audience, auth.TokenAudiencePrefix), "/")
					audienceID, err = db.GetDeploymentID(ctx, tx, project, name)
					if err != nil {
						return err
					}

					err = checkGovernorScope(ctx, tx, caller, refs.DeploymentRef{Project: project, Name: name}, "")
					if err != nil {
						return err
					}
				}

				for _, k := range keys {
					if audienceID == 0 || k.DeploymentID == audienceID {
						allowed[k.DeploymentID] = true
					}
				}

				return nil
			})
		}

		return deploymentID != 0 && allowed[deploymentID]
	}
}

// allowAdminOn checks that the caller may change things in a deployment known by id.
func (a access) allowAdminOn(ctx context.Context, caller *auth.Caller, deploymentID int64) error {
	if caller.IsAdmin() {
		return nil
	}

	if caller.Trusted && caller.CertificateType == api.CertificateTypeDeployments && deploymentID != 0 {
		var keys []db.Key
		err := a.db.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
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

// allowTrusted lets any trusted caller through; the handler scopes what it shows.
func allowTrusted(r *http.Request) error {
	caller := auth.CallerFromContext(r.Context())
	if !caller.Trusted {
		return forbidden("not trusted: add this client's certificate to the trust store")
	}

	if caller.CertificateType == api.CertificateTypeMetrics {
		return errMetricsOnly
	}

	if caller.CertificateType == auth.CertificateTypeMember {
		return errMemberOnly
	}

	return nil
}

// errMemberOnly refuses another member's own certificate outside the internal member
// routes: what a member forwards carries the original caller, who is checked instead.
var errMemberOnly = forbidden("a cluster member's certificate may use the internal member routes only (event relay, forwarded requests)")
