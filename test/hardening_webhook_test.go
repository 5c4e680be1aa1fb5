package test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestWebhookDestinationPolicy: with --webhook-allowed-networks listing only 10.0.0.0/8, a
// webhook on loopback is refused when dialled (the receiver hears nothing) and the delivery
// log says why, without the URL's query; the default policy delivers to loopback. Only
// loopback is ever dialled.
func TestWebhookDestinationPolicy(t *testing.T) {
	t.Parallel()
	var heard atomic.Int32
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		heard.Add(1)
	}))
	defer receiver.Close()

	hook := strings.Replace(receiver.URL, "127.0.0.1", "localhost", 1) + "/hook?token=s3cret"
	lastDelivery := func(d *daemon) api.WebhookDelivery {
		c := d.Unix(t)
		must(t, c.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}, DeploymentPut: api.DeploymentPut{GovernorWebhookURL: hook}}))
		_, err := c.PingWebhook("dep1")
		must(t, err)
		var deliveries []api.WebhookDelivery
		waitUntil(t, "a delivery attempt", 20*time.Second, func() bool {
			var err error
			deliveries, err = c.GetWebhookDeliveries("dep1")
			must(t, err)
			return len(deliveries) > 0 && deliveries[0].Attempts > 0
		}, every(100*time.Millisecond), showing(func() string { return fmt.Sprintf("%+v", deliveries) }))
		return deliveries[0]
	}

	refused := lastDelivery(startDaemon(t, daemonOptions{ExtraArgs: []string{"--webhook-allowed-networks", "10.0.0.0/8"}}))
	if refused.Status == "delivered" || !strings.Contains(refused.LastError, "not allowed") || strings.Contains(refused.LastError, "s3cret") {
		t.Fatalf("refused delivery: %+v", refused)
	}

	if heard.Load() != 0 {
		t.Fatal("the receiver was reached despite the policy")
	}

	delivered := lastDelivery(startDaemon(t, daemonOptions{}))
	if delivered.Status != "delivered" || heard.Load() != 1 {
		t.Fatalf("default policy: %+v, heard %d", delivered, heard.Load())
	}
}
