package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestHookActionsScopedToInstance: a governor inside instance x (a JWT over x's socket)
// may continue, abandon or heartbeat x's hook only; y's is a 403. Admins and admin keys
// over HTTPS reach every instance's hook (here a 409: y waits in no hook).
func TestHookActionsScopedToInstance(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")
	fingerprint := strings.Repeat("a", 64)
	err := a.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, shape, err := refs.ShapeInTx(ctx, tx, refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: "default", Name: "dep1"}, Shape: "web"})
		if err != nil {
			return err
		}

		_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: fingerprint, Type: api.CertificateTypeDeployments, Name: "gov"})
		if err != nil {
			return err
		}

		_, err = db.CreateKey(ctx, tx, deploymentID, api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "k1"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: api.DeploymentKeyRoleAdmin}, CertificateFingerprint: fingerprint})
		if err != nil {
			return err
		}

		for _, name := range []string{"x", "y"} {
			_, err = db.CreateInstance(ctx, tx, "default", shape.ID, name, "h", 1, "test", time.Now())
			if err != nil {
				return err
			}
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	inX := &auth.Caller{Protocol: auth.ProtocolGovernor, Trusted: true, Fingerprint: fingerprint, CertificateType: api.CertificateTypeDeployments, Name: "gov", Audience: auth.TokenAudience("default", "dep1"), Instance: "x", InstanceProject: "default"}
	inXOtherProject := *inX
	inXOtherProject.InstanceProject = "other"
	overTLS := &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, Fingerprint: fingerprint, CertificateType: api.CertificateTypeDeployments, Name: "gov"}
	unix := a.caller
	hook := func(instance string) string {
		return "/1.0/deployments/dep1/shapes/web/instances/" + instance + "/lifecycle"
	}

	for _, action := range []string{"continue", "abandon", "heartbeat"} {
		body := `{"action":"` + action + `"}`
		a.caller = inX
		a.expect("POST", hook("y"), body, 403, "only on its own lifecycle hook")
		a.expect("POST", hook("x"), body, 409, "waits in no lifecycle hook")
		a.caller = &inXOtherProject
		a.expect("POST", hook("x"), body, 403, "")
		a.caller = overTLS
		a.expect("POST", hook("y"), body, 409, "waits in no lifecycle hook")
		a.caller = unix
		a.expect("POST", hook("y"), body, 409, "waits in no lifecycle hook")
	}
}
