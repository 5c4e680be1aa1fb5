package authz

import (
	"context"
	"database/sql"
	"net/http"
	"strconv"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
)

// VMLister lists LXD's virtual machines, in every project it may (backend.LXD).
type VMLister interface {
	VMs() ([]lxdapi.Instance, error)
}

// AuthenticateGovernor turns a request from an in-instance transport (conn) into a caller:
// the bearer token of its Authorization header says which key pair signs for which
// deployment; the transport says which instance is calling.
func AuthenticateGovernor(ctx context.Context, authorization string, conn *governor.Conn, cluster *db.Cluster, lxd VMLister, verifier *auth.TokenVerifier) (*auth.Caller, error) {
	if conn == nil {
		return nil, lxdapi.StatusErrorf(http.StatusUnauthorized, "unknown governor transport")
	}

	raw, found := strings.CutPrefix(authorization, "Bearer ")
	if !found || raw == "" {
		// GET /1.0 stays public, as on HTTPS.
		return &auth.Caller{Protocol: auth.ProtocolGovernor, Instance: conn.Instance, InstanceProject: conn.Project}, nil
	}

	if strings.HasPrefix(raw, rollout.CredentialPrefix) {
		return AuthenticateDeployer(ctx, cluster, conn, raw)
	}

	lookup := func(fingerprint string) (*auth.TokenCertificate, error) {
		var cert *db.Certificate
		err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
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
		caller.Instance, caller.InstanceProject, err = instanceByVsockID(lxd, conn.CID)
		if err != nil {
			return nil, err
		}
	}

	return caller, nil
}

// instanceByVsockID finds the VM whose volatile.vsock_id is cid, in one LXD listing.
func instanceByVsockID(lxd VMLister, cid uint32) (string, string, error) {
	// LXD 5.0 may not list across projects: VMs falls back to the default project.
	instances, err := lxd.VMs()
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
