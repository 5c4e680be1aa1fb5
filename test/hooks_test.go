package test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestLifecycleHooks: a terminate hook holds a delete until continue; a heartbeat extends
// the wait; a timeout applies the default action; the wait survives a restart. A launch
// hook holds a new instance in launching:wait until continue; abandon undoes the launch.
func TestLifecycleHooks(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3)
	hook := env.hookTo(t)
	a, b, c := env.name("a"), env.name("b"), env.name("c")
	for _, name := range []string{a, b, c} {
		env.launch(t, env.gov, name)
	}

	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Hooks = &api.DeploymentShapeHooks{TerminateTimeout: "60s"}
	})

	expectCode(t, env.gov.DeploymentShapeInstanceLifecycle("dep1", "web", a, "continue"), 409, "continue with no wait")
	expectCode(t, env.gov.DeploymentShapeInstanceLifecycle("dep1", "web", a, "jump"), 400, "unknown action")

	// The delete waits in terminating:wait; the instance still counts.
	deleteA, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", a)
	must(t, err)
	hook.waitFor("terminating", 20*time.Second, lifecycleEvent("deployment-instance-terminating", a))
	instance := env.instancesByName(t)[a]
	if instance.Lifecycle != api.LifecycleTerminatingWait || instance.LifecycleDeadline == nil {
		t.Fatalf("a deleted instance with a terminate hook waits: %+v", instance)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err = deleteA.Wait(ctx)
	cancel()
	if err == nil {
		t.Fatal("the delete must wait for the hook")
	}

	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if shape.ScalingCurrent != 3 || len(env.lxdInstances(t)) != 3 {
		t.Fatalf("a draining instance still counts: %d", shape.ScalingCurrent)
	}

	_, err = env.gov.DeleteDeploymentShapeInstance("dep1", "web", a)
	expectCode(t, err, 409, "second delete while draining")
	_, err = env.readOnly.DeleteDeploymentShapeInstance("dep1", "web", a)
	expectCode(t, err, 403, "read-only delete")
	expectCode(t, env.readOnly.DeploymentShapeInstanceLifecycle("dep1", "web", a, "continue"), 403, "read-only continue")

	must(t, env.gov.DeploymentShapeInstanceLifecycle("dep1", "web", a, "continue"))
	must(t, deleteA.Wait(context.Background()))
	if _, ok := env.lxdInstances(t)[a]; ok {
		t.Fatal("a drained instance goes once its hook continues")
	}

	// A heartbeat extends the wait; the timeout then applies the default (abandon: the
	// instance stays).
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Hooks = &api.DeploymentShapeHooks{TerminateTimeout: "3s", DefaultAction: "abandon"}
	})

	deleteB, err := env.gov.DeleteDeploymentShapeInstance("dep1", "web", b)
	must(t, err)
	first := *env.instancesByName(t)[b].LifecycleDeadline
	time.Sleep(1500 * time.Millisecond)
	must(t, env.gov.DeploymentShapeInstanceLifecycle("dep1", "web", b, "heartbeat"))
	extended := *env.instancesByName(t)[b].LifecycleDeadline
	if !extended.After(first.Add(time.Second)) {
		t.Fatalf("a heartbeat must extend the deadline: %s then %s", first, extended)
	}

	err = deleteB.Wait(context.Background())
	if err == nil || !strings.Contains(err.Error(), "abandoned") || time.Now().Before(extended) {
		t.Fatalf("the default action abandon applies at the extended deadline: %v", err)
	}

	if instance := env.instancesByName(t)[b]; instance.Lifecycle != "" || instance.State != "created" {
		t.Fatalf("an abandoned drain keeps the instance: %+v", instance)
	}

	// The wait survives a restart, and the default continue deletes at the deadline.
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Hooks = &api.DeploymentShapeHooks{TerminateTimeout: "6s"}
	})

	_, err = env.gov.DeleteDeploymentShapeInstance("dep1", "web", c)
	must(t, err)
	restart := time.Now()
	env.d.Restart(t)
	t.Logf("restart took %s", time.Since(restart))
	waitLXDOnline(t, env.d)
	if instance := env.instancesByName(t)[c]; instance.Lifecycle != api.LifecycleTerminatingWait {
		t.Fatalf("the wait must survive a restart: %+v", instance)
	}

	env.waitUntil(t, "the drained instance deleted after the deadline", 30*time.Second, func() bool {
		_, ok := env.instancesByName(t)[c]
		return !ok
	})

	if _, ok := env.lxdInstances(t)[c]; ok {
		t.Fatal("the instance deleted by its hook's default must be gone from LXD")
	}
	// Prepare before ready: a new instance waits in launching:wait.
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Hooks = &api.DeploymentShapeHooks{LaunchTimeout: "60s"}
	})

	d, e := env.name("d"), env.name("e")
	env.launch(t, env.gov, d)
	hook.waitFor("launching", 20*time.Second, lifecycleEvent("deployment-instance-launching", d))
	if instance := env.instancesByName(t)[d]; instance.Lifecycle != api.LifecycleLaunchingWait || instance.Status != "Running" {
		t.Fatalf("a new instance with a launch hook waits: %+v", instance)
	}

	u := newCLIUser(t, env.d)
	if out := u.ok("deployment", "shape", "instance", "lifecycle", "continue", "dep1", "web", d); out != "Instance "+d+" continues\n" {
		t.Fatalf("lifecycle continue: %q", out)
	}

	hook.waitFor("ready", 20*time.Second, lifecycleEvent("deployment-instance-ready", d))
	if instance := env.instancesByName(t)[d]; instance.Lifecycle != "" {
		t.Fatalf("continue ends the launch wait: %+v", instance)
	}

	env.launch(t, env.gov, e)
	must(t, env.gov.DeploymentShapeInstanceLifecycle("dep1", "web", e, "abandon"))
	env.waitUntil(t, "the abandoned launch undone", 30*time.Second, func() bool {
		_, recorded := env.instancesByName(t)[e]
		_, live := env.lxdInstances(t)[e]
		return !recorded && !live
	})

	// Since the restart, /1.0/metrics counted each wait that ended: c's drain by its
	// timeout, d's launch by a continue, e's by an abandon (labels sorted, as printed).
	text := scrape(t, env.admin)
	for _, ended := range []string{
		`action="continue",by="timeout",deployment="dep1",hook="terminating:wait"`,
		`action="continue",by="request",deployment="dep1",hook="launching:wait"`,
		`action="abandon",by="request",deployment="dep1",hook="launching:wait"`,
	} {
		if got := sample(text, `lxd_deployd_lifecycle_hook_waits_ended_total{`+ended+`,project="default",shape="web"}`); got != 1 {
			t.Errorf("hook waits ended {%s}: %v, want 1", ended, got)
		}
	}
}
