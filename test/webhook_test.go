package test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestWebhookDeliveries(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3)
	hook := newReceiver(t)
	d, etag, err := env.admin.GetDeployment("dep1")
	must(t, err)
	d.GovernorWebhookURL = hook.server.URL + "/hook"
	d.Config = map[string]string{"webhook.retry_initial_delay": "100ms", "webhook.retry_max_delay": "500ms", "webhook.metrics_interval": "0"}
	must(t, env.admin.UpdateDeployment("dep1", d.DeploymentPut, etag))
	secret, err := env.admin.GetWebhookSecret("dep1", false)
	must(t, err)

	// A webhook that fails its first attempts still gets the event, once, signed.
	hook.set(secret, 2)
	id, err := env.admin.RequestShapeScale("dep1", "web", api.DeploymentShapeScaleRequest{Target: 2, Reason: "peak"})
	must(t, err)
	event := hook.waitFor("scale-request", 20*time.Second, byID(id))
	var request api.WebhookScaleRequestMetadata
	must(t, json.Unmarshal(event.Metadata, &request))
	if event.Type != "scale-request" || event.Deployment != "dep1" || request.Shape != "web" || request.Target != 2 || request.Reason != "peak" || request.RequestedBy != "unix" {
		t.Fatalf("scale request event: %+v %+v", event, request)
	}

	// The daemon records an attempt once the receiver has answered: the receiver can see
	// the event before the record says delivered, so wait for the record.
	var delivery *api.WebhookDelivery
	waitUntil(t, "the delivery recorded as delivered on the third attempt", 10*time.Second, func() bool {
		var err error
		delivery, err = env.admin.GetWebhookDelivery("dep1", id)
		must(t, err)
		return delivery.Status == "delivered" && delivery.Attempts == 3 && delivery.LastResponseCode == 204
	}, every(50*time.Millisecond), showing(func() string { return fmt.Sprintf("delivery record: %+v", delivery) }))

	// Delivery survives a daemon restart: queued while the webhook is down, sent after.
	hook.set(secret, 1000)
	id, err = env.admin.PingWebhook("dep1")
	must(t, err)
	time.Sleep(300 * time.Millisecond)
	env.d.Restart(t)
	hook.set(secret, 0)
	hook.waitFor("ping after restart", 20*time.Second, byID(id))

	// A rotated secret is used from then on; a receiver with the old one refuses.
	rotated, err := env.admin.GetWebhookSecret("dep1", true)
	must(t, err)
	id, err = env.admin.PingWebhook("dep1")
	must(t, err)
	waitUntil(t, "a delivery signed with the rotated secret failing the old secret's check", 10*time.Second, func() bool {
		hook.mu.Lock()
		defer hook.mu.Unlock()
		return hook.rejected > 0
	}, every(50*time.Millisecond))

	hook.set(rotated, 0)
	hook.waitFor("ping with rotated secret", 20*time.Second, byID(id))

	// Lifecycle and metrics events follow real instances.
	web1 := env.name("w1")
	env.launch(t, env.gov, web1)
	hook.waitFor("instance created", 20*time.Second, func(e api.WebhookEvent) bool {
		var m api.WebhookLifecycleMetadata
		return e.Type == "lifecycle" && json.Unmarshal(e.Metadata, &m) == nil && m.Action == "deployment-instance-created" && m.Instance == web1
	})

	d, etag, err = env.admin.GetDeployment("dep1")
	must(t, err)
	d.Config["webhook.metrics_interval"] = "1s"
	must(t, env.admin.UpdateDeployment("dep1", d.DeploymentPut, etag))
	hook.waitFor("metrics with a CPU rate", 60*time.Second, func(e api.WebhookEvent) bool {
		var m api.WebhookMetricsMetadata
		if e.Type != "metrics" || json.Unmarshal(e.Metadata, &m) != nil {
			return false
		}

		instance, ok := m.Shapes["web"].Instances[web1]
		return ok && instance.Status == "Running" && instance.CPURate != nil && instance.MemoryLimitBytes > 0 && m.Shapes["web"].ScalingCurrent == 1
	})

	deliveries, err := env.admin.GetWebhookDeliveries("dep1")
	must(t, err)
	if len(deliveries) < 5 {
		t.Fatalf("deliveries: %+v", deliveries)
	}
}
