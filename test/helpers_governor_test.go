package test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// governorEnv is a daemon on a private LXD with one deployment, a shape and governors.
type governorEnv struct {
	d        *daemon
	lxd      *lxdtest.LXD
	lxdConn  lxd.InstanceServer
	admin    *client.Server
	gov      *client.Server // admin key on the deployment
	readOnly *client.Server // read-only key on the deployment
	prefix   string         // makes instance names unique in the shared LXD
}

// newGovernorEnv starts a daemon beside the shared private LXD, creates deployment dep1 with
// shape web (bounds min..max, busybox) and governors holding admin and read-only keys.
func newGovernorEnv(t testing.TB, min int, max int, extraArgs ...string) *governorEnv {
	t.Helper()
	private := lxdtest.Shared(t)
	d := startDaemon(t, daemonOptions{LXDSocket: private.Socket, ExtraArgs: extraArgs})
	waitLXDOnline(t, d)

	env := &governorEnv{d: d, lxd: private, lxdConn: private.Client(t), admin: d.Unix(t)}
	env.prefix = strings.ToLower(strings.NewReplacer("_", "-", "/", "-").Replace(t.Name()))
	if len(env.prefix) > 30 {
		env.prefix = env.prefix[len(env.prefix)-30:]
	}

	env.prefix = "t" + strings.Trim(env.prefix, "-")
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(t, env.admin.CreateDeploymentShape("dep1", webShape("web", min, max)))
	env.gov = env.governor(t, "dep1", "gov", "admin")
	env.readOnly = env.governor(t, "dep1", "watcher", "read-only")

	t.Cleanup(func() { env.cleanupLXD(t) })
	return env
}

// rolloutEnv is a governor env whose shape web is rolled out. Rollouts name their
// instances web-r<rev>-<random>, outside the env's prefix, so the shape (and all its
// instances) is force-deleted through the daemon at the end.
func newRolloutEnv(t *testing.T, min int, max int, extraArgs ...string) *governorEnv {
	t.Helper()
	env := newGovernorEnv(t, min, max, extraArgs...)
	t.Cleanup(func() {
		_ = env.admin.DeleteDeploymentShape("dep1", "web", true)
		env.cleanupRollouts(t)
	})

	return env
}

// governor makes a deployments certificate with a key of the given role on a deployment
// and returns an HTTPS connection using it.
func (env *governorEnv) governor(t testing.TB, deployment string, key string, role string) *client.Server {
	t.Helper()
	id := newIdentity(t)
	trustIdentity(t, env.admin, id, key+"-cert", "deployments")
	must(t, env.admin.CreateDeploymentKey(deployment, api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: key}, DeploymentKeyPut: api.DeploymentKeyPut{Role: role}, CertificateFingerprint: id.Fingerprint}))
	return env.d.HTTPS(t, id)
}

// name returns a test-unique instance name.
func (env *governorEnv) name(n string) string {
	return env.prefix + "-" + n
}

// launch launches an instance through a governor and waits for it.
func (env *governorEnv) launch(t testing.TB, c *client.Server, name string) {
	t.Helper()
	op, err := c.CreateDeploymentShapeInstance("dep1", "web", name)
	must(t, err)
	must(t, op.Wait(context.Background()))
}

// remove deletes an instance through a governor and waits for it.
func (env *governorEnv) remove(t testing.TB, c *client.Server, name string) {
	t.Helper()
	op, err := c.DeleteDeploymentShapeInstance("dep1", "web", name)
	must(t, err)
	must(t, op.Wait(context.Background()))
}

// removeAll deletes the shape's instances through the governor API, then anything else the
// test made directly in LXD.
func (env *governorEnv) removeAll(t testing.TB) {
	t.Helper()
	names, err := env.gov.GetDeploymentShapeInstanceNames("dep1", "web")
	must(t, err)
	for _, name := range names {
		env.remove(t, env.gov, name)
	}

	env.cleanupLXD(t)
}

// scaleTo launches instances through the governor until the shape has n.
func (env *governorEnv) scaleTo(t testing.TB, n int) []string {
	t.Helper()
	var names []string
	var ops []interface{ Wait(context.Context) error }
	for i := 0; i < n; i++ {
		name := env.name(fmt.Sprintf("i%d", i))
		op, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", name)
		must(t, err)
		ops = append(ops, op)
		names = append(names, name)
	}

	for _, op := range ops {
		must(t, op.Wait(context.Background()))
	}

	return names
}

// updateShape changes the writable fields of shape web through PUT; notes, when given, go
// into the revision the change makes.
func (env *governorEnv) updateShape(t testing.TB, notes string, change func(put *api.DeploymentShapePut)) {
	t.Helper()
	shape, etag, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	put := shape.Writable()
	change(&put)
	path := "/1.0/deployments/dep1/shapes/web"
	if notes != "" {
		path += "?notes=" + url.QueryEscape(notes)
	}

	_, _, err = env.admin.Query(http.MethodPut, path, put, etag)
	must(t, err)
}

// setShape is updateShape without notes.
func (env *governorEnv) setShape(t testing.TB, change func(put *api.DeploymentShapePut)) {
	t.Helper()
	env.updateShape(t, "", change)
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

// rowStates returns the sorted names of the shape's instance records and their states.
func (env *governorEnv) rowStates(t testing.TB) ([]string, string) {
	t.Helper()
	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	names := []string{}
	states := []string{}
	for _, instance := range instances {
		names = append(names, instance.Name)
		states = append(states, instance.Name+"="+instance.State)
	}

	sort.Strings(names)
	return names, strings.Join(states, " ")
}

// waitUntil is waitUntil with the daemon's log in the failure.
func (env *governorEnv) waitUntil(t testing.TB, what string, timeout time.Duration, cond func() bool, opts ...waitOption) {
	t.Helper()
	waitUntil(t, what, timeout, cond, append(opts, withLog(env.d.Log))...)
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

// launchGovernorInstance adds shape gov (0..1, governor.socket on) to deployment, trusts a
// deployments certificate named certName with key keyName of role on the deployment, and
// launches one gov instance: the daemon serves it /dev/lxd-deployd.sock, through which a
// governor inside it uses the key. It returns the key pair and the instance's name.
func (env *governorEnv) launchGovernorInstance(t testing.TB, deployment string, certName string, keyName string, role string) (*identity, string) {
	t.Helper()
	gov := webShape("gov", 0, 1)
	gov.Config = map[string]string{"governor.socket": "true"}
	must(t, env.admin.CreateDeploymentShape(deployment, gov))
	id := newIdentity(t)
	trustIdentity(t, env.admin, id, certName, "deployments")
	must(t, env.admin.CreateDeploymentKey(deployment, api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: keyName}, DeploymentKeyPut: api.DeploymentKeyPut{Role: role}, CertificateFingerprint: id.Fingerprint}))
	name := env.name("gov")
	op, err := env.admin.CreateDeploymentShapeInstance(deployment, "gov", name)
	must(t, err)
	must(t, op.Wait(t.Context()))
	return id, name
}

// healthyReplacement names the healthy replacement autohealing made for instance old
// (named old-r<revision><hex>), or "" while there is none.
func healthyReplacement(byName map[string]api.DeploymentInstance, old string) string {
	for name, instance := range byName {
		if strings.HasPrefix(name, old+"-r") && instance.Health == api.HealthHealthy {
			return name
		}
	}

	return ""
}

// sickFileHealth checks every second that /tmp/sick is absent and replaces an instance
// after two failures: tests make an instance unhealthy by touching the file.
func sickFileHealth() *api.DeploymentShapeHealth {
	return &api.DeploymentShapeHealth{
		Command:            []string{"/bin/sh", "-c", "test ! -f /tmp/sick && echo ok"},
		Interval:           "1s",
		Timeout:            "3s",
		Grace:              "1s",
		UnhealthyThreshold: 2,
		Replace:            true,
	}
}
