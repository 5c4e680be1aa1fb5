package test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestGovernorAuthorizationMatrix runs every governor route over HTTPS for every kind of
// caller, against real instances in the private LXD.
func TestGovernorAuthorizationMatrix(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 10)
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep2"}}))
	otherDeployment := env.governor(t, "dep2", "gov", "admin")

	noKey := newIdentity(t)
	trustIdentity(t, env.admin, noKey, "nokey", "deployments")
	adminID := newIdentity(t)
	trustIdentity(t, env.admin, adminID, "admin", "client")

	fixed := env.name("fixed")
	env.launch(t, env.gov, fixed)

	callers := []struct {
		name  string
		conn  *client.Server
		read  bool
		write bool
	}{
		{"admin key", env.gov, true, true},
		{"read-only key", env.readOnly, true, false},
		{"key of another deployment", otherDeployment, false, false},
		{"deployments certificate without a key", env.d.HTTPS(t, noKey), false, false},
		{"client certificate", env.d.HTTPS(t, adminID), true, true},
		{"untrusted", env.d.HTTPS(t, newIdentity(t)), false, false},
	}

	check := func(caller string, route string, err error, allowed bool) {
		t.Helper()
		if allowed && err != nil {
			t.Errorf("%s: %s: %v", caller, route, err)
		}

		if !allowed {
			code, ok := lxdapi.StatusErrorMatch(err)
			if !ok || code != http.StatusForbidden {
				t.Errorf("%s: %s: expected 403, got %v", caller, route, err)
			}
		}
	}

	wait := func(op *client.Operation, err error) error {
		if err != nil {
			return err
		}

		return op.Wait(context.Background())
	}

	for i, caller := range callers {
		_, err := caller.conn.GetDeploymentShapeInstanceNames("dep1", "web")
		check(caller.name, "list instances", err, caller.read)
		_, err = caller.conn.GetDeploymentShapeInstances("dep1", "web")
		check(caller.name, "list instances recursively", err, caller.read)
		_, err = caller.conn.GetDeploymentShapeInstance("dep1", "web", fixed)
		check(caller.name, "get instance", err, caller.read)
		_, _, err = caller.conn.GetDeployment("dep1")
		check(caller.name, "get deployment", err, caller.read)
		_, _, err = caller.conn.GetDeploymentShape("dep1", "web")
		check(caller.name, "get shape", err, caller.read)

		name := env.name("m" + string(rune('a'+i)))
		err = wait(caller.conn.CreateDeploymentShapeInstance("dep1", "web", name))
		check(caller.name, "launch", err, caller.write)
		target := name
		if !caller.write {
			target = fixed
		}

		err = wait(caller.conn.UpdateDeploymentShapeInstanceState("dep1", "web", target, lxdapi.InstanceStatePut{Action: "restart", Force: true, Timeout: -1}))
		check(caller.name, "restart", err, caller.write)
		err = wait(caller.conn.DeleteDeploymentShapeInstance("dep1", "web", target))
		check(caller.name, "delete", err, caller.write)

		// Operations and events of dep1 are not visible to callers without read access.
		ops, err := caller.conn.GetOperations()
		if caller.read && err != nil {
			t.Errorf("%s: list operations: %v", caller.name, err)
		}

		if !caller.read && len(ops) > 0 {
			t.Errorf("%s: sees %d operations of a deployment it has no key on", caller.name, len(ops))
		}
	}

	// Only the fixed instance is left; the refused callers changed nothing.
	names, err := env.admin.GetDeploymentShapeInstanceNames("dep1", "web")
	must(t, err)
	if len(names) != 1 || names[0] != fixed || len(env.lxdInstances(t)) != 1 {
		t.Fatalf("instances after the matrix: %v", names)
	}

	// Lifecycle hook actions: a governor inside instance X (a token over X's socket) acts
	// on X's hook only; instance Y's is a 403. Over HTTPS the admin key reaches any hook
	// (a 409 here: no instance waits in one).
	inGov := api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "gov"}, DeploymentShapePut: webShape("gov", 0, 1).DeploymentShapePut}
	inGov.Config = map[string]string{"governor.socket": "true"}
	must(t, env.admin.CreateDeploymentShape("dep1", inGov))
	x := env.name("x")
	op, err := env.admin.CreateDeploymentShapeInstance("dep1", "gov", x)
	must(t, err)
	must(t, op.Wait(t.Context()))
	inInstance := newIdentity(t)
	trustIdentity(t, env.admin, inInstance, "inst", "deployments")
	must(t, env.admin.CreateDeploymentKey("dep1", api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "inst"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: inInstance.Fingerprint}))
	signer, err := client.NewTokenSigner(inInstance.CertPEM, inInstance.KeyPEM, "default", "dep1", x)
	must(t, err)
	viaX, err := client.ConnectUnix(filepath.Join(env.d.DataDir, "governor", x+".sock"), &client.ConnectionArgs{TokenSource: signer.Token})
	must(t, err)
	for _, action := range []string{"continue", "abandon", "heartbeat"} {
		expectCode(t, viaX.DeploymentShapeInstanceLifecycle("dep1", "web", fixed, action), 403, "instance X's token on instance Y's hook")
		expectCode(t, viaX.DeploymentShapeInstanceLifecycle("dep1", "gov", x, action), 409, "instance X's token on its own hook")
		expectCode(t, env.gov.DeploymentShapeInstanceLifecycle("dep1", "web", fixed, action), 409, "an admin key over HTTPS on any hook")
		expectCode(t, env.readOnly.DeploymentShapeInstanceLifecycle("dep1", "web", fixed, action), 403, "a read-only key")
	}

	op, err = env.admin.DeleteDeploymentShapeInstance("dep1", "gov", x)
	must(t, err)
	must(t, op.Wait(t.Context()))

	// Deleting the key cuts the governor off at its next request.
	must(t, env.admin.DeleteDeploymentKey("dep1", "gov"))
	_, err = env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
	expectCode(t, err, 403, "deleted key")
}
