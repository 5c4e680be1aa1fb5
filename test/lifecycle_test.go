package test

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// setShape changes the writable fields of shape web.
func (env *governorEnv) setShape(t testing.TB, change func(put *api.DeploymentShapePut)) {
	t.Helper()
	shape, etag, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	put := shape.Writable()
	change(&put)
	must(t, env.admin.UpdateDeploymentShape("dep1", "web", put, etag))
}

// instancesByName returns shape web's instances by name.
func (env *governorEnv) instancesByName(t testing.TB) map[string]api.DeploymentInstance {
	t.Helper()
	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	byName := map[string]api.DeploymentInstance{}
	for _, instance := range instances {
		byName[instance.Name] = instance
	}

	return byName
}

// waitUntil polls cond until it holds, failing with what after timeout.
func (env *governorEnv) waitUntil(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s\n%s", what, timeout, env.d.Log())
		}

		time.Sleep(200 * time.Millisecond)
	}
}

// hookTo points dep1's webhook at a test receiver.
func (env *governorEnv) hookTo(t testing.TB) *receiver {
	t.Helper()
	hook := newReceiver(t)
	d, etag, err := env.admin.GetDeployment("dep1")
	must(t, err)
	d.GovernorWebhookURL = hook.server.URL + "/hook"
	d.Config = map[string]string{"webhook.retry_initial_delay": "100ms", "webhook.metrics_interval": "0"}
	must(t, env.admin.UpdateDeployment("dep1", d.DeploymentPut, etag))
	secret, err := env.admin.GetWebhookSecret("dep1", false)
	must(t, err)
	hook.set(secret, 0)
	return hook
}

// lifecycleEvent matches a lifecycle webhook event by action (and instance when given).
func lifecycleEvent(action string, instance string) func(api.WebhookEvent) bool {
	return func(e api.WebhookEvent) bool {
		var m api.WebhookLifecycleMetadata
		if e.Type != api.WebhookLifecycle || json.Unmarshal(e.Metadata, &m) != nil {
			return false
		}

		return m.Action == action && (instance == "" || m.Instance == instance)
	}
}

// TestAutohealing: an instance whose check starts failing becomes unhealthy and is
// replaced, an instance deleted behind the daemon's back is replaced, the shape's size never
// changes, and a shape where every replacement fails stops after 3 and is degraded.
func TestAutohealing(t *testing.T) {
	env := newGovernorEnv(t, 0, 3, "--reconcile-interval", "1s")
	hook := env.hookTo(t)

	// Replacements show on /1.0/events, read here with LXD's own client.
	admin := newIdentity(t)
	trustIdentity(t, env.admin, admin, "admin", "client")
	lxdClient, err := lxd.ConnectLXD("https://"+env.d.HTTPSAddress, &lxd.ConnectionArgs{TLSServerCert: env.d.ServerCert, TLSClientCert: admin.CertPEM, TLSClientKey: admin.KeyPEM})
	must(t, err)
	listener, err := lxdClient.GetEvents()
	must(t, err)
	defer listener.Disconnect()
	replaced := make(chan lxdapi.EventLifecycle, 10)
	_, err = listener.AddHandler([]string{"lifecycle"}, func(e lxdapi.Event) {
		var lifecycle lxdapi.EventLifecycle
		if json.Unmarshal(e.Metadata, &lifecycle) == nil && lifecycle.Action == "deployment-instance-replaced" {
			replaced <- lifecycle
		}
	})
	must(t, err)

	// Bad health objects are refused and change nothing.
	shape, etag, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	for _, bad := range []api.DeploymentShapeHealth{
		{},
		{Command: []string{"true"}, Interval: "10"},
		{Command: []string{"true"}, Interval: "1ms"},
		{Command: []string{"true"}, UnhealthyThreshold: -1},
	} {
		put := shape.Writable()
		put.Health = &bad
		expectCode(t, env.admin.UpdateDeploymentShape("dep1", "web", put, etag), 400, "bad health object")
	}

	// A check that outlives its timeout fails, and its process is killed.
	a, b := env.name("a"), env.name("b")
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Health = &api.DeploymentShapeHealth{Command: []string{"sleep", "600"}, Interval: "1s", Timeout: "500ms"}
	})

	env.launch(t, env.gov, a)
	env.waitUntil(t, "a check that timed out", 30*time.Second, func() bool {
		check := env.instancesByName(t)[a].HealthCheck
		return check != nil && strings.Contains(check.Output, "timeout")
	})

	env.waitUntil(t, "the timed out check killed", 10*time.Second, func() bool {
		_, ps, _ := env.exec(t, a, "ps")
		return !strings.Contains(ps, "sleep 600")
	})

	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.Health = &api.DeploymentShapeHealth{
			Command:            []string{"/bin/sh", "-c", "test ! -f /tmp/sick && echo ok"},
			Interval:           "1s",
			Timeout:            "3s",
			Grace:              "1s",
			UnhealthyThreshold: 2,
			Replace:            true,
		}
	})

	env.launch(t, env.gov, b)
	sizeHeld := func() bool {
		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		if shape.ScalingCurrent > 2 {
			t.Fatalf("autohealing changed the size: %d instances", shape.ScalingCurrent)
		}

		return shape.ScalingCurrent == 2
	}

	env.waitUntil(t, "both instances healthy", 30*time.Second, func() bool {
		byName := env.instancesByName(t)
		return byName[a].Health == api.HealthHealthy && byName[b].Health == api.HealthHealthy
	})

	u := newCLIUser(t, env.d)
	if out := u.ok("deployment", "shape", "health", "dep1", "web"); !contains(out, "| HEALTH", "| "+a+" | healthy", "| ok") {
		t.Errorf("shape health:\n%s", out)
	}

	one, err := env.readOnly.GetDeploymentShapeInstance("dep1", "web", a)
	must(t, err)
	if one.HealthCheck == nil || one.HealthCheck.CheckedAt == nil || !strings.Contains(one.HealthCheck.Output, "ok") {
		t.Fatalf("the instance must report its last check: %+v", one.HealthCheck)
	}

	// a's service dies: unhealthy after two failed checks, then replaced.
	env.exec(t, a, "touch", "/tmp/sick")
	hook.waitFor("unhealthy", 20*time.Second, lifecycleEvent("deployment-instance-unhealthy", a))
	var replacement string
	env.waitUntil(t, "the unhealthy instance replaced by a healthy one", 60*time.Second, func() bool {
		byName := env.instancesByName(t)
		sizeHeld()
		_, old := byName[a]
		replacement = ""
		for name, instance := range byName {
			if strings.HasPrefix(name, a+"-r") && instance.Health == api.HealthHealthy {
				replacement = name
			}
		}

		return !old && replacement != "" && len(byName) == 2
	})

	select {
	case e := <-replaced:
		cause, _ := e.Context["cause"].(string)
		if !strings.HasSuffix(e.Source, "/instances/"+a) || !strings.Contains(cause, "unhealthy") || e.Context["replacement"] != replacement || e.Requestor == nil || e.Requestor.Username != "autoheal" {
			t.Fatalf("replacement event on /1.0/events: %+v", e)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no replacement event on /1.0/events")
	}

	event := hook.waitFor("replaced", 20*time.Second, lifecycleEvent("deployment-instance-replaced", a))
	var m api.WebhookLifecycleMetadata
	must(t, json.Unmarshal(event.Metadata, &m))
	if !strings.Contains(m.Reason, "unhealthy") || !strings.Contains(m.Reason, replacement) {
		t.Fatalf("a replacement says why and by what: %+v", m)
	}

	if _, ok := env.lxdInstances(t)[a]; ok {
		t.Fatalf("the replaced instance %s is still in LXD", a)
	}

	// b vanishes behind the daemon's back (protection lifted by hand): replaced too.
	instance, _, err := env.lxdConn.GetInstance(b)
	must(t, err)
	put := instance.Writable()
	delete(put.Config, "security.protection.delete")
	op, err := env.lxdConn.UpdateInstance(b, put, "")
	must(t, err)
	must(t, op.Wait())
	op, err = env.lxdConn.UpdateInstanceState(b, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
	must(t, err)
	must(t, op.Wait())
	op, err = env.lxdConn.DeleteInstance(b)
	must(t, err)
	must(t, op.Wait())
	env.waitUntil(t, "the missing instance replaced", 60*time.Second, func() bool {
		byName := env.instancesByName(t)
		_, old := byName[b]
		for name, instance := range byName {
			if strings.HasPrefix(name, b+"-r") && instance.State == "created" {
				return !old && len(byName) == 2 && sizeHeld()
			}
		}

		return false
	})

	hook.waitFor("replaced missing", 20*time.Second, lifecycleEvent("deployment-instance-replaced", b))

	// Every instance fails: replacements that never become healthy stop after three and
	// the shape is degraded, at its size.
	env.setShape(t, func(put *api.DeploymentShapePut) { put.Health.Command = []string{"false"} })
	env.waitUntil(t, "the shape degraded", 120*time.Second, func() bool {
		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		return shape.Status == api.ShapeStatusDegraded
	})

	shape, _, err = env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if !strings.Contains(shape.StatusReason, "3 replacements") || shape.ScalingCurrent != 2 {
		t.Fatalf("degraded shape: %s (%q), %d instances", shape.Status, shape.StatusReason, shape.ScalingCurrent)
	}

	hook.waitFor("degraded", 20*time.Second, lifecycleEvent("deployment-shape-degraded", ""))
	// A replacement started before the verdict may still be finishing: wait for it.
	env.waitUntil(t, "the last replacement settled", 30*time.Second, func() bool {
		byName := env.instancesByName(t)
		for _, instance := range byName {
			if instance.State != "created" {
				return false
			}
		}

		return len(byName) == 2
	})

	settled := names(env.instancesByName(t))
	time.Sleep(4 * time.Second)
	if now := names(env.instancesByName(t)); now != settled {
		t.Fatalf("autohealing went on after the shape was degraded: %s then %s", settled, now)
	}

	// Unhealthy instances come first as scale-down candidates for the governor.
	for _, instance := range env.instancesByName(t) {
		if instance.Health != api.HealthUnhealthy {
			t.Fatalf("with a failing check every instance is unhealthy: %+v", instance)
		}
	}
}

func names(byName map[string]api.DeploymentInstance) string {
	list := make([]string, 0, len(byName))
	for name := range byName {
		list = append(list, name)
	}

	sort.Strings(list)
	return strings.Join(list, ",")
}

// TestLifecycleHooks: a terminate hook holds a delete until continue; a heartbeat extends
// the wait; a timeout applies the default action; the wait survives a restart. A launch
// hook holds a new instance in launching:wait until continue; abandon undoes the launch.
func TestLifecycleHooks(t *testing.T) {
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
}

// TestWarmPool: a shape keeps its pool of stopped instances, a launch takes one (a start,
// not an image unpack) and the pool refills; the pool survives a restart, an instance
// template change replaces it, and deleting the shape removes it.
func TestWarmPool(t *testing.T) {
	env := newGovernorEnv(t, 0, 3)
	seen := map[string]bool{}
	t.Cleanup(func() {
		for name := range seen {
			env.deleteByHand(name)
		}
	})

	pool := func() []api.DeploymentShapeWarmPoolInstance {
		pool, err := env.readOnly.GetDeploymentShapeWarmPool("dep1", "web")
		must(t, err)
		for _, p := range pool {
			seen[p.Name] = true
		}

		return pool
	}

	readyPool := func(what string, hash string) []string {
		var ready []string
		env.waitUntil(t, what, 60*time.Second, func() bool {
			ready = nil
			for _, p := range pool() {
				if p.State == "ready" && (hash == "" || p.TemplateHash == hash) {
					ready = append(ready, p.Name)
				}
			}

			return len(ready) == 2 && len(pool()) == 2
		})

		sort.Strings(ready)
		return ready
	}

	expectCode(t, func() error {
		shape, etag, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		put := shape.Writable()
		put.WarmPool = &api.DeploymentShapeWarmPool{Size: -1}
		return env.admin.UpdateDeploymentShape("dep1", "web", put, etag)
	}(), 400, "negative pool size")

	env.setShape(t, func(put *api.DeploymentShapePut) { put.WarmPool = &api.DeploymentShapeWarmPool{Size: 2} })
	ready := readyPool("a pool of 2", "")
	u := newCLIUser(t, env.d)
	if out := u.ok("deployment", "shape", "warm-pool", "show", "dep1", "web"); !contains(out, "| "+ready[0]+" | ready", "| "+ready[1]+" | ready") {
		t.Errorf("warm-pool show:\n%s", out)
	}

	all, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
	must(t, err)
	for _, instance := range all {
		if !seen[instance.Name] {
			continue
		}

		if instance.Status != "Stopped" || instance.Config["user.lxd-deployd.warm-pool"] != "true" || instance.Config["security.protection.delete"] != "true" {
			t.Fatalf("pool instance %s: %s %v", instance.Name, instance.Status, instance.Config)
		}
	}

	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if shape.ScalingCurrent != 0 || shape.WarmPoolReady != 2 {
		t.Fatalf("pool instances never count: current %d, ready %d", shape.ScalingCurrent, shape.WarmPoolReady)
	}

	// A launch takes a pool instance: LXD made it before the launch was asked for.
	a := env.name("a")
	asked := time.Now()
	env.launch(t, env.gov, a)
	instance, _, err := env.lxdConn.GetInstance(a)
	must(t, err)
	if instance.Status != "Running" || !instance.CreatedAt.Before(asked) || instance.Config["user.lxd-deployd.warm-pool"] != "" || instance.Config["user.lxd-deployd.shape"] != "web" {
		t.Fatalf("a launch from the pool is a pool instance renamed and started: %s created %s (asked %s) %v", instance.Status, instance.CreatedAt, asked, instance.Config)
	}

	refilled := readyPool("the pool refilled", "")
	if strings.Join(refilled, ",") == strings.Join(ready, ",") {
		t.Fatalf("the launch must have taken one of %v", ready)
	}

	// The pool survives a restart as it is.
	env.d.Restart(t)
	waitLXDOnline(t, env.d)
	time.Sleep(time.Second)
	if after := readyPool("the pool after a restart", ""); strings.Join(after, ",") != strings.Join(refilled, ",") {
		t.Fatalf("a restart kept the pool %v, got %v", refilled, after)
	}

	// A new instance template makes the pool outdated: it is replaced, never used.
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Config = map[string]string{"user.revision": "2"}
	})

	b := env.name("b")
	env.launch(t, env.gov, b)
	hash := env.instancesByName(t)[b].TemplateHash
	if hash == env.instancesByName(t)[a].TemplateHash {
		t.Fatal("the template change must change the hash")
	}

	readyPool("the pool remade from the new template", hash)
	instance, _, err = env.lxdConn.GetInstance(b)
	must(t, err)
	if instance.Config["user.revision"] != "2" {
		t.Fatalf("the launch after a template change must not use an outdated pool instance: %v", instance.Config)
	}

	// With reuse_on_scale_in, a scale-in stops the instance and returns it to a short pool.
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.WarmPool = &api.DeploymentShapeWarmPool{Size: 3, ReuseOnScaleIn: true}
	})

	instance, _, err = env.lxdConn.GetInstance(b)
	must(t, err)
	uuid := instance.Config["volatile.uuid"]
	env.remove(t, env.gov, b)
	env.waitUntil(t, "the scaled-in instance back in the pool", 10*time.Second, func() bool {
		for _, p := range pool() {
			pooled, _, err := env.lxdConn.GetInstance(p.Name)
			if err == nil && pooled.Config["volatile.uuid"] == uuid && p.State == "ready" {
				return pooled.Status == "Stopped" && pooled.Config["user.lxd-deployd.warm-pool"] == "true"
			}
		}

		return false
	})

	if _, ok := env.instancesByName(t)[b]; ok {
		t.Fatal("an instance returned to the pool is no longer an instance of the shape")
	}

	// Deleting the shape removes its pool from LXD.
	env.remove(t, env.gov, a)
	must(t, env.admin.DeleteDeploymentShape("dep1", "web", false))
	env.waitUntil(t, "the pool of a deleted shape removed", 30*time.Second, func() bool {
		all, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
		must(t, err)
		for _, instance := range all {
			if seen[instance.Name] {
				return false
			}
		}

		return true
	})
}

// deleteByHand removes an instance from the shared LXD whatever its protection.
func (env *governorEnv) deleteByHand(name string) {
	instance, _, err := env.lxdConn.GetInstance(name)
	if err != nil {
		return
	}

	put := instance.Writable()
	delete(put.Config, "security.protection.delete")
	if op, err := env.lxdConn.UpdateInstance(name, put, ""); err == nil {
		_ = op.Wait()
	}

	if op, err := env.lxdConn.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, ""); err == nil {
		_ = op.Wait()
	}

	if op, err := env.lxdConn.DeleteInstance(name); err == nil {
		_ = op.Wait()
	}
}
