package main

import (
	"net/http"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/policy"
)

// TestGovernorTracksRequests: the reference governor scales a shape to its front door's
// request rate over requests_per_instance, with the cooldowns of CPU tracking, and logs
// metrics without traffic figures as no change.
func TestGovernorTracksRequests(t *testing.T) {
	web := policy.DefaultShape()
	web.RequestsPerInstance = 50
	web.ScaleUpCooldown = 30 * time.Second
	web.ScaleDownCooldown = time.Minute
	gt := newGovernorTest(t, &policy.Policy{Shapes: map[string]policy.Shape{"web": web}}, false)
	gt.scaler.addShape("web", 2, 1, 5)
	metrics := func(id string, current int, traffic *api.WebhookTrafficMetrics) {
		t.Helper()
		m := testShapeMetrics("web", current, 1, 5, 0.01, 0.01) // idle CPU: not what decides
		m.Traffic = traffic
		if status := gt.send(testMetrics(id, map[string]api.WebhookShapeMetrics{"web": m})); status != http.StatusAccepted {
			t.Fatalf("metrics %s: status %d", id, status)
		}

		gt.g.wait()
	}

	// 175 requests per second for 50 per instance: 4 instances.
	metrics("m1", 2, &api.WebhookTrafficMetrics{RequestRate: 175, Sessions: 9})
	gt.wantOps("launch web/web-*", "launch web/web-*")
	gt.wantLog(`shape=web event=m1 trigger=metrics current=2 desired=4 action=scale-up why="request rate 175/s for a target of 50 per instance (87.5 per instance of 2)"`)

	// Within the cooldown, nothing.
	gt.advance(10 * time.Second)
	metrics("m2", 4, &api.WebhookTrafficMetrics{RequestRate: 400})
	gt.wantOps("launch web/web-*", "launch web/web-*")
	gt.wantLog(`event=m2 trigger=metrics current=4 desired=4 action=none why="cooldown: scale up to 5 held`)

	// No traffic figures: no change, said at info level.
	gt.advance(2 * time.Minute)
	metrics("m3", 4, nil)
	gt.wantOps("launch web/web-*", "launch web/web-*")
	gt.wantLog(`event=m3 trigger=metrics current=4 desired=4 action=none why="no traffic data: no change`)

	// Past the cooldown, down to the rate: 60/s for 50 per instance is 2.
	metrics("m4", 4, &api.WebhookTrafficMetrics{RequestRate: 60})
	gt.wantOps("launch web/web-*", "launch web/web-*", "delete web/web-*", "delete web/web-*") // the newest first
	gt.wantLog(`event=m4 trigger=metrics current=4 desired=2 action=scale-down why="request rate 60/s`)
}
