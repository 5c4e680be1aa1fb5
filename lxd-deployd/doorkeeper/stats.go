package doorkeeper

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// WithStats returns the endpoints with each one's figures from the door's last read of its
// frontend (GET .../endpoints, the web view's shape page): an endpoint the door does not
// list (not applied yet, or removed) gets none, as do all of them without figures. The
// events keep sending endpoints without figures: they change on every read and would
// flood /1.0/events.
func WithStats(endpoints []api.DeploymentShapeEndpoint, stats map[string]frontdoor.FrontendStats, key string) []api.DeploymentShapeEndpoint {
	fs, ok := stats[key]
	if !ok {
		return endpoints
	}

	out := make([]api.DeploymentShapeEndpoint, len(endpoints))
	for i, e := range endpoints {
		out[i] = e
		s, ok := fs.Servers[e.Instance]
		if ok {
			out[i].Traffic = &api.WebhookTrafficMetrics{RequestRate: s.RequestRate, Sessions: s.Sessions, Queue: s.Queue, ResponseTimeSeconds: s.ResponseTime.Seconds()}
		}
	}

	return out
}
