package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/policy"
)

// TestGovernorIdleToZero: the reference governor scales a shape in to zero once its front
// door has seen no request for idle_to_zero, and back to one on the front door's scale
// request (a wake).
func TestGovernorIdleToZero(t *testing.T) {
	web := policy.DefaultShape()
	web.IdleToZero = 5 * time.Minute
	gt := newGovernorTest(t, &policy.Policy{Shapes: map[string]policy.Shape{"web": web}}, false)
	gt.scaler.addShape("web", 2, 0, 5)
	metrics := func(id string, current int, rate float64) {
		m := testShapeMetrics("web", current, 0, 5)
		m.Traffic = &api.WebhookTrafficMetrics{RequestRate: rate}
		if status := gt.send(testMetrics(id, map[string]api.WebhookShapeMetrics{"web": m})); status != http.StatusAccepted {
			t.Fatalf("metrics %s: status %d", id, status)
		}

		gt.g.wait()
	}

	metrics("m1", 2, 4) // requests: the idle time counts from here
	gt.advance(3 * time.Minute)
	metrics("m2", 2, 0)
	gt.advance(90 * time.Second)
	metrics("m3", 2, 0)
	gt.wantOps()
	gt.advance(time.Minute)
	metrics("m4", 2, 0)
	gt.wantOps("delete web/web2", "delete web/web1")
	gt.wantLog("idle to zero: no request through the front door for 5m30s")

	wake := testEvent("w1", api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{Shape: "web", Target: 1, Reason: "wake from zero: 3 requests wait at the front door for an instance", RequestedBy: "front-door"})
	if status := gt.send(wake); status != http.StatusAccepted {
		t.Fatalf("wake: status %d", status)
	}

	gt.g.wait()
	gt.wantOps("delete web/web2", "delete web/web1", "launch web/web-*")
	gt.advance(time.Minute)
	metrics("m5", 1, 0) // woken a minute ago: not idle long enough
	gt.wantOps("delete web/web2", "delete web/web1", "launch web/web-*")
}
