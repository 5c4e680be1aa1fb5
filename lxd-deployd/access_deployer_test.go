package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/authz"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
)

// TestDeployerCredential: a custom rollout's settings are checked, its deployer's
// credential is good from its own instance only, while it runs, on its shape only, and a
// custom rollout cannot be paused (no LXD: the engine does not run here, the deployer's row
// is made by hand).
func TestDeployerCredential(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", strings.Replace(shapeBody, `"web"`, `"other"`, 1), 201, "")
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"strategy":"custom"}}`, 400, "rollout.custom.image")
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"strategy":"custom","custom":{"image":"d"},"pre":{"image":"m","command":["/m"]}}}`, 400, "rollout.pre")
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"pre":{"image":"m"}}}`, 400, "rollout.pre.command")
	a.expect("PATCH", "/1.0/deployments/dep1/shapes/web", `{"rollout":{"strategy":"custom","custom":{"image":"deployer","timeout":"5m"}}}`, 200, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts", "", 202, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts/1/pause", "", 409, "cannot be paused")

	secret := strings.Repeat("ab", 32)
	var id int64
	a.tx(func(ctx context.Context, tx *sql.Tx) error {
		shape, err := db.GetShapes(ctx, tx, db.ShapeFilter{Name: "web"})
		if err != nil {
			return err
		}

		r, err := db.GetRollout(ctx, tx, shape[0].ID, 1)
		if err != nil {
			return err
		}

		id = r.ID
		return db.CreateDeployer(ctx, tx, r.ID, db.KindDeployer, "default", "web-d1-abcdef", secret, time.Now())
	})

	credential := fmt.Sprintf("%s%d-%s", rollout.CredentialPrefix, id, secret)
	own := &governor.Conn{Instance: "web-d1-abcdef", Project: "default"}
	caller, err := authz.AuthenticateDeployer(context.Background(), a.db, own, credential)
	if err != nil || caller.Shape != "web" || caller.CertificateType != auth.CertificateTypeDeployer || caller.Audience != auth.TokenAudience("default", "dep1") {
		t.Fatalf("deployer caller %+v, err %v", caller, err)
	}

	for what, try := range map[string]struct {
		conn *governor.Conn
		raw  string
	}{
		"another instance": {&governor.Conn{Instance: "web-1", Project: "default"}, credential},
		"a VM":             {&governor.Conn{CID: 7}, credential},
		"a wrong secret":   {own, credential[:len(credential)-2] + "cd"},
		"another rollout":  {own, fmt.Sprintf("%s%d-%s", rollout.CredentialPrefix, id+1, secret)},
		"garbage":          {own, rollout.CredentialPrefix + "x"},
	} {
		_, err := authz.AuthenticateDeployer(context.Background(), a.db, try.conn, try.raw)
		if !lxdapi.StatusErrorCheck(err, 401) {
			t.Errorf("%s: %v, want a 401", what, err)
		}
	}

	a.caller = caller
	a.expect("GET", "/1.0/deployments/dep1/shapes/web", "", 200, "")
	a.expect("GET", "/1.0/deployments/dep1/shapes/web/instances", "", 200, "")
	a.expect("GET", "/1.0/deployments/dep1/shapes/other", "", 403, "may not act on shape other")
	a.expect("POST", "/1.0/deployments/dep1/shapes/other/instances/x", "", 403, "may not act on shape other")
	a.expect("DELETE", "/1.0/deployments/dep1/shapes/other/instances/x", "", 403, "may not act on shape other")
	a.expect("GET", "/1.0/deployments/dep1", "", 403, "for shape web only")
	a.expect("GET", "/1.0/deployments/dep1/shapes/web/instances?project=p2", "", 403, "may not act on deployment")
	a.expect("GET", "/1.0/deployments", "", 403, "")

	// Revoked when the deployer ends, and when the rollout is over.
	a.caller = &auth.Caller{Protocol: auth.ProtocolUnix, Trusted: true}
	a.tx(func(ctx context.Context, tx *sql.Tx) error {
		_, err := db.EndDeployer(ctx, tx, id, db.KindDeployer, 0, "done", time.Now())
		return err
	})

	_, err = authz.AuthenticateDeployer(context.Background(), a.db, own, credential)
	if !lxdapi.StatusErrorCheck(err, 401) {
		t.Fatalf("the credential of an ended deployer: %v", err)
	}

	ro := a.expect("GET", "/1.0/deployments/dep1/shapes/web/rollouts/1", "", 200, "")["metadata"].(map[string]any)
	deployer := ro["deployer"].(map[string]any)
	if deployer["instance"] != "web-d1-abcdef" || deployer["exit_code"] != float64(0) || deployer["output"] != "done" {
		t.Fatalf("rollout's deployer: %v", deployer)
	}
}
