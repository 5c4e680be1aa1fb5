package test

import (
	"context"
	"net/http"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestGovernorAuthorizationMatrix runs every governor route over HTTPS for every kind of
// caller, against real instances in the private LXD.
func TestGovernorAuthorizationMatrix(t *testing.T) {
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

	// Deleting the key cuts the governor off at its next request.
	must(t, env.admin.DeleteDeploymentKey("dep1", "gov"))
	_, err = env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
	expectCode(t, err, 403, "deleted key")
}
