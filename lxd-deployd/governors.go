package main

import (
	"context"
	"database/sql"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
)

// Shape config keys for in-instance governors.
const (
	// configGovernorExternal lets governors from instances outside the deployment act on
	// the shape (then only the token counts).
	configGovernorExternal = "governor.external"
)

// governorSockets is what instance handlers need of the governor transports.
type governorSockets = fleet.Sockets

// restoreGovernorSockets re-creates, at start, the sockets of the instances that were made
// with one (their proxy device is in LXD whatever the shape says now).
func restoreGovernorSockets(ctx context.Context, cluster *db.Cluster, sockets governorSockets) error {
	var rows []db.Instance
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{})
		return err
	})
	if err != nil {
		return err
	}

	// One socket that cannot come back must not keep the daemon down.
	for _, row := range rows {
		if !row.GovernorSocket {
			continue
		}

		_, err = sockets.AddInstance(row.Project, row.Name)
		if err != nil {
			slog.Warn("governor socket not restored", "instance", row.Name, "project", row.Project, "err", err)
		}
	}

	return nil
}

// authenticateGovernor turns a request from an in-instance transport into a caller: the
// bearer token says which key pair signs for which deployment; the transport says which
// instance is calling.
func authenticateGovernor(r *http.Request, conn *governor.Conn, cluster *db.Cluster, lxdConn *backend.LXD, verifier *auth.TokenVerifier) (*auth.Caller, error) {
	if conn == nil {
		return nil, lxdapi.StatusErrorf(http.StatusUnauthorized, "unknown governor transport")
	}

	header := r.Header.Get("Authorization")
	raw, found := strings.CutPrefix(header, "Bearer ")
	if !found || raw == "" {
		// GET /1.0 stays public, as on HTTPS.
		return &auth.Caller{Protocol: auth.ProtocolGovernor, Instance: conn.Instance, InstanceProject: conn.Project}, nil
	}

	if strings.HasPrefix(raw, rollout.CredentialPrefix) {
		return authenticateDeployer(r.Context(), cluster, conn, raw)
	}

	lookup := func(fingerprint string) (*auth.TokenCertificate, error) {
		var cert *db.Certificate
		err := cluster.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
			var err error
			cert, err = db.GetCertificate(ctx, tx, fingerprint)
			return err
		})
		if err != nil || cert.Fingerprint != fingerprint {
			return nil, err
		}

		parsed, err := auth.ParsePEMCertificate(cert.Certificate)
		if err != nil {
			return nil, err
		}

		return &auth.TokenCertificate{TrustedCertificate: auth.TrustedCertificate{Fingerprint: cert.Fingerprint, Type: cert.Type, Name: cert.Name}, Certificate: parsed}, nil
	}

	caller, err := verifier.Verify(raw, lookup, time.Now())
	if err != nil {
		return nil, err
	}

	caller.Instance, caller.InstanceProject = conn.Instance, conn.Project
	if conn.CID != 0 {
		caller.Instance, caller.InstanceProject, err = instanceByVsockID(lxdConn, conn.CID)
		if err != nil {
			return nil, err
		}
	}

	return caller, nil
}

// instanceByVsockID finds the VM whose volatile.vsock_id is cid, in one LXD listing.
func instanceByVsockID(lxdConn *backend.LXD, cid uint32) (string, string, error) {
	// LXD 5.0 may not list across projects: VMs falls back to the default project.
	instances, err := lxdConn.VMs()
	if err != nil {
		return "", "", err
	}

	// Only a running VM can be calling; two with the same id would make the answer a guess.
	want := strconv.FormatUint(uint64(cid), 10)
	var found []lxdapi.Instance
	for _, instance := range instances {
		if instance.Config["volatile.vsock_id"] == want && instance.StatusCode == lxdapi.Running {
			found = append(found, instance)
		}
	}

	if len(found) != 1 {
		return "", "", lxdapi.StatusErrorf(http.StatusForbidden, "%d running LXD instances have vsock context id %d: cannot tell which is calling", len(found), cid)
	}

	return found[0].Name, found[0].Project, nil
}

// checkGovernorScope holds a governor's request to the one deployment its token is for, and
// to governors running inside that deployment, unless the shape lets external ones in.
func checkGovernorScope(ctx context.Context, tx *sql.Tx, caller *auth.Caller, ref refs.DeploymentRef, shape string) error {
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
		if s.Config[configGovernorExternal] == "true" {
			return nil
		}
	}

	return forbidden("instance %q is not a member of deployment %q: governors act on their own deployment unless a shape sets %s=true", caller.Instance, ref.Name, configGovernorExternal)
}
