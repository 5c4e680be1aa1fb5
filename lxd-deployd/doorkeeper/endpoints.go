// Package doorkeeper keeps every shape's front door in step with its instances (issue 35,
// doc/traffic.md): it computes each shape's endpoints from the instance records and what
// LXD reports (Endpoints, a pure function), hands the door the whole picture when it
// changes and at each round (frontdoor.Door.Apply), tells /1.0/events, reads the door's
// figures for the metrics, and tells the fleet when a leaving instance has drained
// (Drained).
package doorkeeper

import (
	"sort"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Leaving says whether an instance is on its way out: being deleted or replaced, waiting
// in terminating:wait, or marked draining. A leaving instance drains.
func Leaving(row db.Instance, draining bool) bool {
	return draining || shapes.Going(row) || row.Hook.Hook == api.LifecycleTerminatingWait
}

// Endpoints lists a shape's instances as a load balancer should see them, by name:
// draining when leaving (Leaving), serving when ready for traffic (shapes.ReadyFor:
// made, out of launching:wait, healthy when checked, running in LXD for the rollout's
// min_ready) and with an address, not-ready otherwise. live is LXD's word by instance name
// (an instance LXD does not list is not running), drains the instances marked draining
// (by record ID).
func Endpoints(shape db.Shape, rows []db.Instance, live map[string]backend.Serving, drains map[int64]time.Time, now time.Time) []api.DeploymentShapeEndpoint {
	port := 0
	if shape.Traffic != nil {
		port = shape.Traffic.Port
	}

	minReady := time.Duration(0)
	rollout, err := shapes.ResolveRollout(shape.Rollout, shape.ScalingCurrent)
	if err == nil {
		minReady = rollout.MinReady
	}

	endpoints := []api.DeploymentShapeEndpoint{}
	for _, row := range rows {
		if row.ShapeID != shape.ID {
			continue
		}

		e := api.DeploymentShapeEndpoint{Instance: row.Name, Port: port, State: api.EndpointNotReady}
		seen, listed := live[row.Name]
		if listed && seen.Address.IsValid() {
			e.Address = seen.Address.String()
		}

		_, draining := drains[row.ID]
		switch {
		case Leaving(row, draining):
			e.State = api.EndpointDraining
		case listed && e.Address != "" && shapes.ReadyFor(shape.Health, row, &lxdapi.Instance{StatusCode: seen.StatusCode, LastUsedAt: seen.LastUsedAt}, minReady, now):
			e.State = api.EndpointServing
		}

		endpoints = append(endpoints, e)
	}

	sort.Slice(endpoints, func(i, j int) bool { return endpoints[i].Instance < endpoints[j].Instance })
	return endpoints
}

// Frontend is a shape's door as frontdoor.Door.Apply takes it. Endpoints without an
// address are left out: the door cannot reach them, and they serve nothing. The door's own
// check asks the path of the shape's http health check when that checks the traffic port
// (else "/").
func Frontend(project string, deployment string, shape string, traffic api.DeploymentShapeTraffic, health *api.DeploymentShapeHealth, endpoints []api.DeploymentShapeEndpoint) frontdoor.Frontend {
	protocol := traffic.Protocol
	if protocol == "" {
		protocol = api.TrafficProtocolHTTP
	}

	f := frontdoor.Frontend{Key: frontdoor.Key(project, deployment, shape), Listen: traffic.Listen, Backend: traffic.Backend, Protocol: protocol, Servers: []frontdoor.Server{}}
	if protocol == api.TrafficProtocolHTTP && health != nil && health.HTTP != nil && health.HTTP.Port == traffic.Port {
		f.CheckPath = health.HTTP.Path
	}
	for _, e := range endpoints {
		if e.Address == "" {
			continue
		}

		f.Servers = append(f.Servers, frontdoor.Server{Name: e.Instance, Address: e.Address, Port: e.Port, State: e.State})
	}

	return f
}

// Equal says whether two lists of endpoints are the same (both sorted by instance).
func Equal(a []api.DeploymentShapeEndpoint, b []api.DeploymentShapeEndpoint) bool {
	if len(a) != len(b) {
		return false
	}

	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}

	return true
}
