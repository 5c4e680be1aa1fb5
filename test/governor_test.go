package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
)

func TestGovernorScalesWithinBounds(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 1, 3)
	web1, web2, web3, web4 := env.name("web1"), env.name("web2"), env.name("web3"), env.name("web4")

	// A launch cannot be cancelled half way: that would leave an instance without a record.
	first, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", web1)
	must(t, err)
	expectCode(t, first.Cancel(), 400, "cancel a launch")
	must(t, first.Wait(context.Background()))
	for _, name := range []string{web2, web3} {
		env.launch(t, env.gov, name)
	}

	_, err = env.gov.CreateDeploymentShapeInstance("dep1", "web", web4)
	expectCode(t, err, 409, "launch beyond scaling_maximum")

	live := env.lxdInstances(t)
	if len(live) != 3 {
		t.Fatalf("LXD has %d instances, want 3", len(live))
	}

	for name, instance := range live {
		if instance.Status != "Running" || instance.Config["user.lxd-deployd.shape"] != "web" || instance.Config["security.protection.delete"] != "true" {
			t.Fatalf("instance %s: status %s config %v", name, instance.Status, instance.Config)
		}
	}

	instances, err := env.readOnly.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	if len(instances) != 3 || instances[0].Status != "Running" || instances[0].TemplateHash == "" || instances[0].InstanceURL != "/1.0/instances/"+instances[0].Name {
		t.Fatalf("instances: %+v", instances)
	}

	one, err := env.readOnly.GetDeploymentShapeInstance("dep1", "web", web1)
	must(t, err)
	if one.LiveState == nil || one.LiveState.Processes < 1 {
		t.Fatalf("single instance must carry LXD's live state: %+v", one)
	}

	// A plain delete through LXD's own API is refused by LXD itself, even once stopped.
	stop, err := env.lxdConn.UpdateInstanceState(web1, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
	must(t, err)
	must(t, stop.Wait())
	deleteOp, err := env.lxdConn.DeleteInstance(web1)
	if err == nil {
		err = deleteOp.Wait()
	}

	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "protect") {
		t.Fatalf("LXD must refuse to delete a protected instance, got %v", err)
	}

	// Read-only keys cannot change anything.
	_, err = env.readOnly.DeleteDeploymentShapeInstance("dep1", "web", web3)
	expectCode(t, err, 403, "read-only delete")

	env.remove(t, env.gov, web3)
	env.remove(t, env.gov, web2)
	_, err = env.gov.DeleteDeploymentShapeInstance("dep1", "web", web1)
	expectCode(t, err, 409, "delete below scaling_minimum")
	if len(env.lxdInstances(t)) != 1 {
		t.Fatalf("LXD must keep exactly the minimum")
	}

	// State changes are operations too.
	op, err := env.gov.UpdateDeploymentShapeInstanceState("dep1", "web", web1, lxdapi.InstanceStatePut{Action: "start", Timeout: -1})
	must(t, err)
	must(t, op.Wait(context.Background()))
	if status := env.lxdInstances(t)[web1].Status; status != "Running" {
		t.Fatalf("after start: %s", status)
	}

	// Bounds changed under the current size: the shape says so, and only moves toward the
	// bounds are accepted.
	shape, etag, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	shape.ScalingMinimum, shape.ScalingMaximum = 2, 3
	must(t, env.admin.UpdateDeploymentShape("dep1", "web", shape.DeploymentShapePut, etag))
	shape, _, err = env.gov.GetDeploymentShape("dep1", "web")
	must(t, err)
	if shape.Status != "out-of-bounds" {
		t.Fatalf("shape below its new minimum must be out-of-bounds: %+v", shape)
	}

	env.launch(t, env.gov, web2)

	// A template change affects only instances created afterwards.
	shape, etag, err = env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	shape.InstanceTemplate.Config = map[string]string{"user.generation": "2"}
	must(t, env.admin.UpdateDeploymentShape("dep1", "web", shape.DeploymentShapePut, etag))
	env.launch(t, env.gov, web3)
	live = env.lxdInstances(t)
	if live[web3].Config["user.generation"] != "2" || live[web2].Config["user.generation"] != "" {
		t.Fatalf("template change: web2 %v, web3 %v", live[web2].Config, live[web3].Config)
	}

	// Without force, deleting the shape is refused; with force, LXD is cleaned first.
	expectCode(t, env.admin.DeleteDeploymentShape("dep1", "web", false), 409, "delete shape with instances")
	must(t, env.admin.DeleteDeploymentShape("dep1", "web", true))
	if left := env.lxdInstances(t); len(left) != 0 {
		t.Fatalf("forced delete left instances in LXD: %v", left)
	}

	// The activity log says where the shape's two instances went, and who took them.
	activity, err := env.admin.GetDeploymentActivity("dep1", 0, "web")
	must(t, err)
	if len(activity) < 2 {
		t.Fatalf("activity after a forced delete: %+v", activity)
	}

	for i, e := range activity[len(activity)-2:] {
		if e.Action != "scale-down" || e.From != 2-i || e.To != 1-i || e.Who != "admin" || !strings.Contains(e.Why, "deleted with force") {
			t.Fatalf("forced delete must log each instance it took as a scale-down by admin: %+v", activity)
		}
	}
}

func TestLXDClientWaitsOnOurOperations(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 2)
	admin := newIdentity(t)
	trustIdentity(t, env.admin, admin, "admin", "client")

	// LXD's own Go client: Operation.Wait() listens on /1.0/events.
	c := env.d.LXDClient(t, admin)
	op, _, err := c.RawOperation("POST", "/deployments/dep1/shapes/web/instances/"+env.name("a"), nil, "")
	must(t, err)
	done := make(chan error, 1)
	go func() { done <- op.Wait() }()
	select {
	case err = <-done:
		must(t, err)
	case <-time.After(60 * time.Second):
		t.Fatal("LXD's client did not see the operation finish")
	}

	if op.Get().StatusCode != lxdapi.Success {
		t.Fatalf("operation: %+v", op.Get())
	}

	// A failed operation reports LXD's error verbatim, and leaves nothing behind.
	shape, etag, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	shape.InstanceTemplate.Source.Alias = "no-such-image"
	must(t, env.admin.UpdateDeploymentShape("dep1", "web", shape.DeploymentShapePut, etag))
	failing, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", env.name("b"))
	must(t, err)
	err = failing.Wait(context.Background())
	if err == nil || err.Error() != "Image alias not found" {
		t.Fatalf("expected LXD's own error, verbatim, got %v", err)
	}

	names, err := env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
	must(t, err)
	if len(names) != 1 || len(env.lxdInstances(t)) != 1 {
		t.Fatalf("a failed launch must leave nothing: rows %v", names)
	}
}

func TestConcurrentLaunchesHoldBounds(t *testing.T) {
	t.Parallel()
	const max = 3
	env := newGovernorEnv(t, 0, max)
	governors := []*client.Server{env.gov, env.governor(t, "dep1", "gov2", "admin"), env.governor(t, "dep1", "gov3", "admin")}

	type result struct {
		op  *client.Operation
		err error
	}

	results := make(chan result, 3*max)
	start := make(chan struct{})
	for i := 0; i < 3*max; i++ {
		go func(i int) {
			<-start
			op, err := governors[i%len(governors)].CreateDeploymentShapeInstance("dep1", "web", env.name(fmt.Sprintf("r%d", i)))
			results <- result{op, err}
		}(i)
	}

	close(start)
	accepted := 0
	for i := 0; i < 3*max; i++ {
		r := <-results
		if r.err != nil {
			expectCode(t, r.err, 409, "concurrent launch over the maximum")
			continue
		}

		accepted++
		must(t, r.op.Wait(context.Background()))
	}

	rows, err := env.admin.GetDeploymentShapeInstanceNames("dep1", "web")
	must(t, err)
	live := env.lxdInstances(t)
	if accepted != max || len(rows) != max || len(live) != max {
		t.Fatalf("accepted %d, rows %d, LXD %d: want exactly %d each", accepted, len(rows), len(live), max)
	}

	for _, name := range rows {
		if _, ok := live[name]; !ok {
			t.Fatalf("row %s has no LXD instance", name)
		}
	}
}

// TestLaunchNeverTouchesUnmanagedInstances launches over the name of an instance made
// directly in LXD: the launch is refused and the instance is left exactly as it was.
func TestLaunchNeverTouchesUnmanagedInstances(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 2)
	victim := env.name("victim")
	op, err := env.lxdConn.CreateInstance(lxdapi.InstancesPost{Name: victim, Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}})
	must(t, err)
	must(t, op.Wait())

	launch, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", victim)
	if err == nil {
		err = launch.Wait(context.Background())
	}

	if err == nil || !strings.Contains(err.Error(), "already has an instance") {
		t.Fatalf("launching over an unmanaged instance: %v", err)
	}

	instance, _, err := env.lxdConn.GetInstance(victim)
	must(t, err)
	if instance.Config["user.lxd-deployd.deployment"] != "" {
		t.Fatalf("the unmanaged instance was changed: %v", instance.Config)
	}

	names, err := env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
	must(t, err)
	if len(names) != 0 {
		t.Fatalf("a refused launch left rows: %v", names)
	}
}
