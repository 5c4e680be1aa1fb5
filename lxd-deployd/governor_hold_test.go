package main

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestGovernorHoldAPI: PUT/GET/DELETE .../governor with admin keys of two certificates, a
// read-only key and an admin, and the governor API's changes while one holds the deployment.
func TestGovernorHoldAPI(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")
	callers := map[string]*auth.Caller{}
	err := a.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, "default", "dep1")
		if err != nil {
			return err
		}

		for _, k := range []struct{ name, role string }{{"ka", "admin"}, {"kb", "admin"}, {"kc", "read-only"}} {
			fingerprint := strings.Repeat(k.name[1:], 64)
			_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: fingerprint, Type: api.CertificateTypeDeployments, Name: k.name})
			if err != nil {
				return err
			}

			_, err = db.CreateKey(ctx, tx, id, api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: k.name}, DeploymentKeyPut: api.DeploymentKeyPut{Role: k.role}, CertificateFingerprint: fingerprint})
			if err != nil {
				return err
			}

			callers[k.name] = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, CertificateType: api.CertificateTypeDeployments, Fingerprint: fingerprint, Name: k.name}
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	admin := a.caller
	as := func(name string) { a.caller = callers[name] }
	holder := func() map[string]any {
		t.Helper()
		return a.expect("GET", "/1.0/deployments/dep1/governor", "", 200, "")["metadata"].(map[string]any)
	}

	// Acting on an instance (no LXD here): 503 when the caller may act, 409 when a
	// governor holds the deployment and the caller is not it.
	act := func(status int, want string) {
		t.Helper()
		a.expect("DELETE", "/1.0/deployments/dep1/shapes/web/instances/nope", "", status, want)
	}

	as("ka")
	if h := holder(); h["name"] != "" {
		t.Fatalf("nobody registered, yet: %v", h)
	}

	a.expect("PUT", "/1.0/deployments/dep1/governor", `{"name":"gov-a","ttl":2}`, 400, "ttl 2 is out of range: give 5 to 3600 seconds")
	a.expect("PUT", "/1.0/deployments/dep1/governor", `{"ttl":60}`, 400, "governor name")
	a.expect("PUT", "/1.0/deployments/dep1/governor", `{"name":"gov-a","ttl":60}`, 200, "")
	first := holder()
	if first["name"] != "gov-a" || first["key"] != "ka" || first["since"] == "" {
		t.Fatalf("after gov-a registered: %v", first)
	}

	as("kb")
	a.expect("PUT", "/1.0/deployments/dep1/governor", `{"name":"gov-b"}`, 409, `is governed by governor "gov-a" (key "ka") since`)
	act(409, "only the active governor changes its instances")
	a.expect("DELETE", "/1.0/deployments/dep1/governor", "", 409, "releases only its own hold")
	as("kc")
	a.expect("PUT", "/1.0/deployments/dep1/governor", `{"name":"gov-c"}`, 403, "read-only")
	act(403, "read-only")
	as("ka")
	act(503, "LXD is unavailable")
	a.caller = admin
	act(503, "LXD is unavailable")

	// Renewing keeps since; a takeover moves it.
	as("ka")
	time.Sleep(1100 * time.Millisecond)
	a.expect("PUT", "/1.0/deployments/dep1/governor", `{"name":"gov-a","ttl":60}`, 200, "")
	if h := holder(); h["since"] != first["since"] || h["renewed_at"] == first["renewed_at"] {
		t.Fatalf("renewal: %v, was %v", h, first)
	}

	as("kb")
	a.expect("PUT", "/1.0/deployments/dep1/governor", `{"name":"gov-b","takeover":true}`, 200, "")
	if h := holder(); h["name"] != "gov-b" || h["key"] != "kb" || h["since"] == first["since"] {
		t.Fatalf("after the takeover: %v", h)
	}

	act(503, "LXD is unavailable")
	as("ka")
	act(409, `governor "gov-b" (key "kb")`)
	a.expect("PUT", "/1.0/deployments/dep1/governor", `{"name":"gov-a"}`, 409, `governor "gov-b"`)

	// The holder releases; then anyone may act and register.
	as("kb")
	a.expect("DELETE", "/1.0/deployments/dep1/governor", "", 200, "")
	if h := holder(); h["name"] != "" {
		t.Fatalf("after the release: %v", h)
	}

	as("ka")
	act(503, "LXD is unavailable")

	// Deleting the holder's key frees the deployment at once.
	as("kb")
	a.expect("PUT", "/1.0/deployments/dep1/governor", `{"name":"gov-b"}`, 200, "")
	a.caller = admin
	a.expect("DELETE", "/1.0/deployments/dep1/keys/kb", "", 200, "")
	as("ka")
	act(503, "LXD is unavailable")
	if h := holder(); h["name"] != "" {
		t.Fatalf("after the holder's key was deleted: %v", h)
	}

	// An admin releases anyone's hold.
	a.expect("PUT", "/1.0/deployments/dep1/governor", `{"name":"gov-a"}`, 200, "")
	a.caller = admin
	a.expect("DELETE", "/1.0/deployments/dep1/governor", "", 200, "")
	if h := holder(); h["name"] != "" {
		t.Fatalf("after an admin's release: %v", h)
	}
}
