package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// securityFixture is dep1 with shape web, a deployments certificate holding a key of the
// given role on it, and instance x.
func securityFixture(t *testing.T, a *testAPI, role string) (readOnly *auth.Caller, governor *auth.Caller, instance db.Instance) {
	t.Helper()
	fingerprint := strings.Repeat("b", 64)
	err := a.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, shape, err := refs.ShapeInTx(ctx, tx, refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: "default", Name: "dep1"}, Shape: "web"})
		if err != nil {
			return err
		}

		_, err = db.CreateCertificate(ctx, tx, db.Certificate{Fingerprint: fingerprint, Type: api.CertificateTypeDeployments, Name: "reader"})
		if err != nil {
			return err
		}

		_, err = db.CreateKey(ctx, tx, deploymentID, api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "k1"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: role}, CertificateFingerprint: fingerprint})
		if err != nil {
			return err
		}

		_, err = db.CreateInstance(ctx, tx, "default", shape.ID, "x", "h", 1, "test", time.Now())
		if err != nil {
			return err
		}

		rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID, Name: "x"})
		if err == nil {
			instance = rows[0]
		}

		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	readOnly = &auth.Caller{Protocol: auth.ProtocolTLS, Trusted: true, Fingerprint: fingerprint, CertificateType: api.CertificateTypeDeployments, Name: "reader"}
	governor = &auth.Caller{Protocol: auth.ProtocolGovernor, Trusted: true, Fingerprint: fingerprint, CertificateType: api.CertificateTypeDeployments, Name: "reader", Audience: auth.TokenAudience("default", "dep1"), Instance: "x", InstanceProject: "default"}
	return readOnly, governor, instance
}

// body sends a GET and returns the whole answer as text.
func (a *testAPI) body(path string) string {
	a.t.Helper()
	code, envelope, _ := a.do("GET", path, "")
	if code != 200 {
		a.t.Fatalf("GET %s: %d %v", path, code, envelope)
	}

	data, _ := json.Marshal(envelope)
	return string(data)
}

// TestSecretsRedactedForNonAdmins: a password rotated by PUT stays in the shape's history;
// read-only keys and governors see neither the old nor the new value in shapes, revisions,
// diffs, the activity log or the deployment's config, while admins see them all.
func TestSecretsRedactedForNonAdmins(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1","config":{"user.api_token":"tok-SECRET3","user.tier":"gold"}}`, 201, "")
	shape := func(password string) string {
		return `{"scaling_maximum":3,"config":{"user.signing_key":"SECRET4"},"instance_template":{"source":{"type":"image","alias":"busybox"},"config":{"environment.DB_PASSWORD":"` + password + `","environment.MODE":"prod","user.colour":"blue"},"devices":{"eth0":{"type":"nic","secret.psk":"SECRET5"}}}}`
	}

	a.expect("POST", "/1.0/deployments/dep1/shapes?notes=environment.DB_PASSWORD%3DSECRET6", `{"name":"web",`+shape("hunter2-SECRET1")[1:], 201, "")
	a.expect("PUT", "/1.0/deployments/dep1/shapes/web?notes=rotate+user.api_token%3DSECRET7", shape("rotated-SECRET2"), 200, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes/web/rollouts", `{"notes":"password: SECRET8"}`, 202, "")
	readOnly, governor, _ := securityFixture(t, a, api.DeploymentKeyRoleReadOnly)
	admin := a.caller

	paths := []string{
		"/1.0/deployments/dep1",
		"/1.0/deployments/dep1/shapes?recursion=1",
		"/1.0/deployments/dep1/shapes/web",
		"/1.0/deployments/dep1/shapes/web/revisions?recursion=1",
		"/1.0/deployments/dep1/shapes/web/revisions/1",
		"/1.0/deployments/dep1/shapes/web/revisions/2?diff=1",
		"/1.0/deployments/dep1/activity",
		"/1.0/deployments/dep1/shapes/web/rollouts?recursion=1",
		"/1.0/deployments/dep1/shapes/web/rollouts/1",
	}

	for _, caller := range []*auth.Caller{readOnly, governor} {
		a.caller = caller
		for _, path := range paths {
			text := a.body(path)
			if strings.Contains(text, "SECRET") {
				t.Errorf("%s: GET %s shows a secret: %s", caller, path, text)
			}
		}

		// What is not secret stays, and the mask says a secret is set (and changed).
		text := a.body("/1.0/deployments/dep1/shapes/web")
		for _, want := range []string{`"environment.DB_PASSWORD":"[redacted]"`, `"user.colour":"blue"`, `"user.signing_key":"[redacted]"`, `"type":"nic"`} {
			if !strings.Contains(text, want) {
				t.Errorf("%s: shape lacks %s: %s", caller, want, text)
			}
		}

		diff := a.body("/1.0/deployments/dep1/shapes/web/revisions/2?diff=1")
		if !strings.Contains(diff, `"field":"instance_template.config.environment.DB_PASSWORD","new":"[redacted]","old":"[redacted]"`) {
			t.Errorf("%s: diff does not show the masked change: %s", caller, diff)
		}
	}

	a.caller = admin
	all := ""
	for _, path := range paths {
		all += a.body(path)
	}

	for _, secret := range []string{"hunter2-SECRET1", "rotated-SECRET2", "tok-SECRET3", "SECRET4", "SECRET5", "SECRET6", "SECRET7", "SECRET8"} {
		if !strings.Contains(all, secret) {
			t.Errorf("admins must see %s", secret)
		}
	}
}

// TestHealthOutputForAdminsOnly: the output of a check reaches admins in the API only;
// read-only keys see the verdict, and the governor's webhook gets the verdict and the
// exit code.
func TestHealthOutputForAdminsOnly(t *testing.T) {
	a := newTestAPI(t)
	a.expect("POST", "/1.0/deployments", `{"name":"dep1","governor_webhook_url":"http://127.0.0.1:9/hook"}`, 201, "")
	a.expect("POST", "/1.0/deployments/dep1/shapes", shapeBody, 201, "")
	readOnly, _, row := securityFixture(t, a, api.DeploymentKeyRoleReadOnly)
	now := time.Now()
	unhealthy := db.InstanceHealth{Status: api.HealthUnhealthy, Output: "exit status 7: Authorization: Bearer SECRET-in-output", CheckedAt: &now, ExitCode: 7}
	err := a.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		err := db.SetInstanceState(ctx, tx, row.ID, db.InstanceCreating, db.InstanceCreated, "test", time.Now())
		if err != nil {
			return err
		}

		return db.SetInstanceHealth(ctx, tx, row.ID, unhealthy)
	})
	if err != nil {
		t.Fatal(err)
	}

	path := "/1.0/deployments/dep1/shapes/web/instances/x"
	if text := a.body(path); !strings.Contains(text, "SECRET-in-output") {
		t.Errorf("admins see the check's output: %s", text)
	}

	a.caller = readOnly
	for _, p := range []string{path, "/1.0/deployments/dep1/shapes/web/instances?recursion=1"} {
		text := a.body(p)
		if strings.Contains(text, "SECRET") || !strings.Contains(text, `"status":"unhealthy"`) {
			t.Errorf("a read-only key sees %s", text)
		}
	}

	// The webhook carries the verdict and exit code.
	row.Health = unhealthy
	a.daemon.fleet.Healer.HealthChanged(context.Background(), health.Change{Instance: row, After: unhealthy})
	err = a.db.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		deliveries, err := db.GetDeliveries(ctx, tx, row.DeploymentID, 10)
		if err != nil {
			return err
		}

		verdicts := 0
		for _, delivery := range deliveries {
			body := string(delivery.Body)
			if strings.Contains(body, "SECRET") {
				t.Errorf("a webhook delivery carries the check's output: %s", body)
			}

			if strings.Contains(body, "deployment-instance-unhealthy") {
				verdicts++
				if !strings.Contains(body, "unhealthy (check exit code 7)") {
					t.Errorf("the unhealthy delivery lacks the verdict and exit code: %s", body)
				}
			}
		}

		if verdicts != 1 {
			t.Errorf("webhook deliveries: %d of deployment-instance-unhealthy among %d, want 1", verdicts, len(deliveries))
		}

		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
