package test

import (
	"encoding/json"
	"testing"
	"time"

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
