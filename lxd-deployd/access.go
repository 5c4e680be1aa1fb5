package main

import (
	"context"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/authz"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// access adapts package authz's checks to the route table: each parses the request's
// caller and path, and authz decides.
type access struct {
	db *db.Cluster
}

func (a access) checker() authz.Checker {
	return authz.Checker{DB: a.db}
}

// requestPath is what authz reads of a request's path, parsed only when asked.
type requestPath struct {
	r *http.Request
}

func (p requestPath) Deployment() (refs.DeploymentRef, error) { return deploymentFromRequest(p.r) }
func (p requestPath) Instance() (refs.InstanceRef, error)     { return instanceFromRequest(p.r) }

func (p requestPath) Shape() string {
	shape, _ := rest.PathName(p.r, "shape", "shape")
	return shape
}

// allowDeploymentRead lets admins through, and deployments certificates holding any key of
// the deployment the request names (authz.Checker.DeploymentRead).
func (a access) allowDeploymentRead(r *http.Request) error {
	return a.checker().DeploymentRead(r.Context(), auth.CallerFromContext(r.Context()), requestPath{r})
}

// allowDeploymentAdmin lets admins through, and deployments certificates holding an admin
// key of the deployment the request names (authz.Checker.DeploymentAdmin).
func (a access) allowDeploymentAdmin(r *http.Request) error {
	return a.checker().DeploymentAdmin(r.Context(), auth.CallerFromContext(r.Context()), requestPath{r})
}

// allowInstanceHook guards continue, abandon and heartbeat on an instance's lifecycle
// hook: a deployment admin, or a governor inside that very instance (authz.OwnInstance).
func (a access) allowInstanceHook(r *http.Request) error {
	return a.allowOwnInstance(r, "act only on its own lifecycle hook")
}

// allowOwnInstance is allowInstanceHook's rule for any action on one instance; may says
// what the refused one may do.
func (a access) allowOwnInstance(r *http.Request, may string) error {
	return a.checker().OwnInstance(r.Context(), auth.CallerFromContext(r.Context()), requestPath{r}, may)
}

// filter returns what events and operations the caller may see (authz.Checker.Filter).
func (a access) filter(caller *auth.Caller) events.Filter {
	return a.checker().Filter(caller)
}

// allowAdminOn checks that the caller may change things in a deployment known by id.
func (a access) allowAdminOn(ctx context.Context, caller *auth.Caller, deploymentID int64) error {
	return a.checker().AdminOn(ctx, caller, deploymentID)
}

// authenticateGovernor turns a request from an in-instance transport into a caller
// (authz.AuthenticateGovernor).
func authenticateGovernor(r *http.Request, conn *governor.Conn, cluster *db.Cluster, lxdConn *backend.LXD, verifier *auth.TokenVerifier) (*auth.Caller, error) {
	return authz.AuthenticateGovernor(r.Context(), r.Header.Get("Authorization"), conn, cluster, lxdConn, verifier)
}

// allowTrusted lets any trusted caller through; the handler scopes what it shows
// (authz.Trusted).
func allowTrusted(r *http.Request) error {
	return authz.Trusted(auth.CallerFromContext(r.Context()))
}

// allowSecretRead lets admins read credentials and unmasked manifests, but not read-only
// web sessions (authz.RefuseSessionCredentials).
func allowSecretRead(r *http.Request) error {
	err := allowAdmin(r)
	if err != nil {
		return err
	}

	return authz.RefuseSessionCredentials(auth.CallerFromContext(r.Context()), false)
}

// allowCredentialWrite lets admins change credentials, but no web session.
func allowCredentialWrite(r *http.Request) error {
	err := allowAdmin(r)
	if err != nil {
		return err
	}

	return authz.RefuseSessionCredentials(auth.CallerFromContext(r.Context()), true)
}
