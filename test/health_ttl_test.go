package test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestTTLHealthChecks: instances of a shape with a ttl check report their own health
// through their governor socket (doc/health.md); a governor inside instance X reports for
// X only, an admin key over HTTPS for any instance, a read-only key for none; an instance
// that stops reporting turns unhealthy after its ttl; a shape without a ttl check refuses
// reports. The reports cost LXD nothing: no exec runs in the instances.
func TestTTLHealthChecks(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3)
	gov := webShape("gov", 0, 2)
	gov.Config = map[string]string{"governor.socket": "true"}
	gov.Health = &api.DeploymentShapeHealth{TTL: "2s", Grace: "0s", UnhealthyThreshold: 1}
	must(t, env.admin.CreateDeploymentShape("dep1", gov))
	x, y := env.name("x"), env.name("y")
	for _, name := range []string{x, y} {
		op, err := env.admin.CreateDeploymentShapeInstance("dep1", "gov", name)
		must(t, err)
		must(t, op.Wait(t.Context()))
	}

	t.Cleanup(func() { _ = env.admin.DeleteDeploymentShape("dep1", "gov", true) })
	inInstance := newIdentity(t)
	trustIdentity(t, env.admin, inInstance, "inst", "deployments")
	must(t, env.admin.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "inst"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: inInstance.Fingerprint}))
	signer, err := client.NewTokenSigner(inInstance.CertPEM, inInstance.KeyPEM, "default", "dep1", x)
	must(t, err)
	viaX, err := client.ConnectUnix(filepath.Join(env.d.DataDir, "governor", x+".sock"), &client.ConnectionArgs{TokenSource: signer.Token})
	must(t, err)

	report := func(c *client.Server, shape string, name string, status string, output string) error {
		_, _, err := c.Query("PUT", "/1.0/deployments/dep1/shapes/"+shape+"/instances/"+name+"/health", api.DeploymentInstanceHealthPut{Status: status, Output: output}, "")
		return err
	}

	health := func(name string) api.DeploymentInstance {
		one, err := env.admin.GetDeploymentShapeInstance("dep1", "gov", name)
		must(t, err)
		return *one
	}

	phase(t, "who may report", func(t *testing.T) {
		must(t, report(viaX, "gov", x, "passing", "queue depth 3"))
		expectCode(t, report(viaX, "gov", y, "passing", ""), 403, "instance X's token reporting for Y")
		expectCode(t, report(env.readOnly, "gov", y, "passing", ""), 403, "a read-only key")
		expectCode(t, report(env.gov, "gov", y, "sick", ""), 400, "a status that is neither passing nor failing")
		expectCode(t, report(env.gov, "gov", y, "passing", strings.Repeat("x", 2000)), 400, "an output over 1 KiB")
		must(t, report(env.gov, "gov", y, "passing", "ok"))
		if h := health(x); h.Health != api.HealthHealthy || h.HealthCheck == nil || h.HealthCheck.Output != "queue depth 3" {
			t.Fatalf("x reported passing: %+v %+v", h.Health, h.HealthCheck)
		}

		if h := health(y); h.Health != api.HealthHealthy {
			t.Fatalf("y was reported passing by an admin key: %s", h.Health)
		}
	})

	phase(t, "a failing report", func(t *testing.T) {
		must(t, report(viaX, "gov", x, "failing", "disk full"))
		if h := health(x); h.Health != api.HealthUnhealthy || h.HealthCheck.Output != "disk full" {
			t.Fatalf("x reported failing (threshold 1): %+v %+v", h.Health, h.HealthCheck)
		}

		must(t, report(viaX, "gov", x, "passing", "recovered"))
	})

	// y keeps reporting, x goes quiet: x alone turns unhealthy once its ttl passes.
	phase(t, "a missed report", func(t *testing.T) {
		waitUntil(t, "x unhealthy once its ttl passed, y reporting meanwhile", 30*time.Second, func() bool {
			if health(x).Health == api.HealthUnhealthy {
				return true
			}

			must(t, report(env.gov, "gov", y, "passing", "ok"))
			return false
		}, every(500*time.Millisecond), showing(func() string { return fmt.Sprintf("x %+v", health(x)) }))

		h := health(x)
		if h.Health != api.HealthUnhealthy || !strings.Contains(h.HealthCheck.Output, "no report within the ttl") {
			t.Fatalf("x stopped reporting: %+v %+v", h.Health, h.HealthCheck)
		}

		if health(y).Health != api.HealthHealthy {
			t.Fatalf("y kept reporting and must stay healthy: %+v", health(y))
		}
	})

	phase(t, "a shape without a ttl check", func(t *testing.T) {
		env.launch(t, env.gov, env.name("w"))
		expectCode(t, report(env.gov, "web", env.name("w"), "passing", ""), 409, "a shape without a ttl check")
	})

	// What LXD holds: the three instances run, and no report reached into them.
	lxdNow := env.lxdInstances(t)
	for _, name := range []string{x, y, env.name("w")} {
		if lxdNow[name].Status != "Running" {
			t.Errorf("LXD must still run %s: %+v", name, lxdNow[name].Status)
		}
	}
}
