package webhooks_test

import (
	"context"
	"net/http"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/deployments"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rollout"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestWebhookAPI: a scale request must be within the shape's bounds and needs a governor
// webhook, as a ping does; both queue a delivery that can be read back and redelivered; a
// rotated secret replaces the old one.
func TestWebhookAPI(t *testing.T) {
	cluster := dbtest.Open(t)
	ctx := context.Background()
	dep := refs.DeploymentRef{Project: "default", Name: "dep1"}
	shape := refs.ShapeRef{DeploymentRef: dep, Shape: "web"}
	_, secret, err := deployments.Create(ctx, cluster, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}, nil)
	if err != nil {
		t.Fatal(err)
	}

	_, err = deployments.CreateShape(ctx, cluster, dep, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 3}}, rollout.RevisionArgs{Cause: rollout.CauseAPI})
	if err != nil {
		t.Fatal(err)
	}

	_, err = webhooks.ScaleRequest(ctx, cluster, shape, api.DeploymentShapeScaleRequest{Target: 4}, "admin")
	if !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) {
		t.Fatalf("a target above the maximum: %v", err)
	}

	_, err = webhooks.ScaleRequest(ctx, cluster, shape, api.DeploymentShapeScaleRequest{Target: 2}, "admin")
	if !lxdapi.StatusErrorCheck(err, http.StatusConflict) {
		t.Fatalf("a scale request without a webhook: %v", err)
	}

	_, err = webhooks.Ping(ctx, cluster, dep)
	if !lxdapi.StatusErrorCheck(err, http.StatusConflict) {
		t.Fatalf("a ping without a webhook: %v", err)
	}

	_, err = deployments.Update(ctx, cluster, dep, func(current api.DeploymentPut) (api.DeploymentPut, error) {
		current.GovernorWebhookURL = "http://127.0.0.1:1/hook"
		return current, nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}

	id, err := webhooks.ScaleRequest(ctx, cluster, shape, api.DeploymentShapeScaleRequest{Target: 2, Reason: "busy"}, "admin")
	if err != nil || id == "" {
		t.Fatalf("scale request: %q, %v", id, err)
	}

	delivery, err := webhooks.Delivery(ctx, cluster, dep, id)
	if err != nil || delivery.Event == nil || delivery.Event.Type != api.WebhookScaleRequest {
		t.Fatalf("the delivery: %+v, %v", delivery, err)
	}

	ping, err := webhooks.Ping(ctx, cluster, dep)
	if err != nil || ping == "" {
		t.Fatalf("ping: %q, %v", ping, err)
	}

	listed, err := webhooks.Deliveries(ctx, cluster, dep)
	if err != nil || len(listed) != 2 {
		t.Fatalf("deliveries: %v, %v", listed, err)
	}

	err = webhooks.Redeliver(ctx, cluster, dep, id)
	if err != nil {
		t.Fatal(err)
	}

	shown, err := webhooks.Secret(ctx, cluster, dep, false)
	if err != nil || shown != secret {
		t.Fatalf("the secret: %q, %v", shown, err)
	}

	rotated, err := webhooks.Secret(ctx, cluster, dep, true)
	if err != nil || rotated == secret || len(rotated) != 64 {
		t.Fatalf("rotated: %q, %v", rotated, err)
	}

	shown, _ = webhooks.Secret(ctx, cluster, dep, false)
	if shown != rotated {
		t.Fatalf("after the rotation the secret is %q, not %q", shown, rotated)
	}
}
