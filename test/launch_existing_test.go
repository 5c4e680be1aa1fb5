package test

import (
	"context"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// TestLaunchNeverTouchesInstancesItDidNotMake launches over the name of a running instance
// that carries the deployment's own keys but was made before the launch (a leftover, or
// another daemon's): no read comes before the create, so LXD's refusal is all the launch
// hears, and its cleanup must leave the older instance exactly as it was.
func TestLaunchNeverTouchesInstancesItDidNotMake(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 2)
	older := env.name("older")
	keys := map[string]string{"user.lxd-deployd.deployment": "dep1", "user.lxd-deployd.shape": "web", "user.mark": "older"}
	op, err := env.lxdConn.CreateInstance(lxdapi.InstancesPost{Name: older, Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}, InstancePut: lxdapi.InstancePut{Config: keys}})
	must(t, err)
	must(t, op.Wait())
	op, err = env.lxdConn.UpdateInstanceState(older, lxdapi.InstanceStatePut{Action: "start", Timeout: -1}, "")
	must(t, err)
	must(t, op.Wait())
	t.Cleanup(func() { _ = stopAndDeleteT(env, older) })
	before, _, err := env.lxdConn.GetInstance(older)
	must(t, err)

	launch, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", older)
	if err == nil {
		err = launch.Wait(context.Background())
	}

	if err == nil || !strings.Contains(err.Error(), "already has an instance") {
		t.Fatalf("launching over an older instance with the deployment's keys: %v", err)
	}

	after, _, err := env.lxdConn.GetInstance(older)
	must(t, err)
	if after.StatusCode != lxdapi.Running || !after.CreatedAt.Equal(before.CreatedAt) || after.Config["user.mark"] != "older" || after.Config["security.protection.delete"] != "" {
		t.Fatalf("the older instance was changed: %s, made %v (was %v), config %v", after.Status, after.CreatedAt, before.CreatedAt, after.Config)
	}

	names, err := env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
	must(t, err)
	if len(names) != 0 {
		t.Fatalf("a refused launch left rows: %v", names)
	}

	// The name is free again once the older instance is gone: a launch makes it anew.
	must(t, stopAndDeleteT(env, older))
	env.launch(t, env.gov, older)
	made, _, err := env.lxdConn.GetInstance(older)
	must(t, err)
	if made.StatusCode != lxdapi.Running || made.Config["user.mark"] != "" {
		t.Fatalf("the launch after made %s with config %v", made.Status, made.Config)
	}
}

// stopAndDeleteT force-stops and deletes an instance directly in LXD.
func stopAndDeleteT(env *governorEnv, name string) error {
	op, err := env.lxdConn.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
	if err == nil {
		err = op.Wait()
	}

	if err == nil || strings.Contains(err.Error(), "already stopped") {
		op, err = env.lxdConn.DeleteInstance(name)
		if err == nil {
			err = op.Wait()
		}
	}

	return err
}
