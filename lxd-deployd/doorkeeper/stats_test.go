package doorkeeper

import (
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestWithStats(t *testing.T) {
	endpoints := []api.DeploymentShapeEndpoint{
		{Instance: "web1", Address: "10.0.0.5", Port: 80, State: api.EndpointServing},
		{Instance: "web2", Address: "10.0.0.6", Port: 80, State: api.EndpointDraining},
		{Instance: "web3", Port: 80, State: api.EndpointNotReady},
	}

	key := frontdoor.Key("default", "shop", "web")
	stats := map[string]frontdoor.FrontendStats{
		key: {RequestRate: 30, Servers: map[string]frontdoor.ServerStats{
			"web1": {RequestRate: 25, Sessions: 4, Queue: 1, ResponseTime: 3 * time.Millisecond, Up: true},
			"web2": {RequestRate: 0, Sessions: 2},
		}},
		frontdoor.Key("default", "shop", "api"): {Servers: map[string]frontdoor.ServerStats{"web3": {RequestRate: 99}}},
	}

	got := WithStats(endpoints, stats, key)
	want := []*api.WebhookTrafficMetrics{
		{RequestRate: 25, Sessions: 4, Queue: 1, ResponseTimeSeconds: 0.003},
		{Sessions: 2},
		nil, // the door does not list it (another shape's server of that name does not count)
	}

	for i, w := range want {
		g := got[i].Traffic
		if (g == nil) != (w == nil) || (g != nil && *g != *w) {
			t.Errorf("%s: traffic %+v, want %+v", got[i].Instance, g, w)
		}

		if got[i].State != endpoints[i].State || got[i].Address != endpoints[i].Address {
			t.Errorf("%s: endpoint changed: %+v", got[i].Instance, got[i])
		}
	}

	if endpoints[0].Traffic != nil {
		t.Errorf("the endpoints given were changed: %+v", endpoints[0])
	}

	// No figures for the shape (no door, or none read yet): the endpoints as they were.
	for _, s := range []map[string]frontdoor.FrontendStats{nil, {}} {
		for _, e := range WithStats(endpoints, s, key) {
			if e.Traffic != nil {
				t.Errorf("%s: traffic %+v without figures", e.Instance, e.Traffic)
			}
		}
	}
}
