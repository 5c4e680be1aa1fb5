package doorkeeper

import (
	"net/netip"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestEndpoints(t *testing.T) {
	now := time.Date(2026, 11, 27, 23, 0, 0, 0, time.UTC)
	long := now.Add(-time.Hour)
	addr := netip.MustParseAddr("10.0.0.5")
	running := backend.Serving{Address: addr, StatusCode: lxdapi.Running, LastUsedAt: long}
	checks := &api.DeploymentShapeHealth{Command: []string{"true"}}
	created := db.Instance{ID: 1, ShapeID: 7, Name: "web1", State: db.InstanceCreated, StateChangedAt: long}
	with := func(f func(*db.Instance)) db.Instance {
		row := created
		f(&row)
		return row
	}

	cases := []struct {
		name     string
		health   *api.DeploymentShapeHealth
		minReady string
		row      db.Instance
		live     *backend.Serving
		draining bool
		state    string
		address  string
	}{
		{"running and made", nil, "", created, &running, false, api.EndpointServing, "10.0.0.5"},
		{"healthy", checks, "", with(func(r *db.Instance) { r.Health.Status = api.HealthHealthy }), &running, false, api.EndpointServing, "10.0.0.5"},
		{"not checked yet", checks, "", created, &running, false, api.EndpointNotReady, "10.0.0.5"},
		{"unhealthy", checks, "", with(func(r *db.Instance) { r.Health.Status = api.HealthUnhealthy }), &running, false, api.EndpointNotReady, "10.0.0.5"},
		{"in launching:wait", nil, "", with(func(r *db.Instance) { r.Hook.Hook = api.LifecycleLaunchingWait }), &running, false, api.EndpointNotReady, "10.0.0.5"},
		{"being made", nil, "", with(func(r *db.Instance) { r.State = db.InstanceCreating }), &running, false, api.EndpointNotReady, "10.0.0.5"},
		{"stopped", nil, "", created, &backend.Serving{Address: addr, StatusCode: lxdapi.Stopped}, false, api.EndpointNotReady, "10.0.0.5"},
		{"no address", nil, "", created, &backend.Serving{StatusCode: lxdapi.Running, LastUsedAt: long}, false, api.EndpointNotReady, ""},
		{"not in LXD", nil, "", created, nil, false, api.EndpointNotReady, ""},
		{"within min_ready", nil, "2h", created, &running, false, api.EndpointNotReady, "10.0.0.5"},
		{"past min_ready", nil, "30m", created, &running, false, api.EndpointServing, "10.0.0.5"},
		{"marked draining", nil, "", created, &running, true, api.EndpointDraining, "10.0.0.5"},
		{"being deleted", nil, "", with(func(r *db.Instance) { r.State = db.InstanceDeleting }), &running, false, api.EndpointDraining, "10.0.0.5"},
		{"being replaced", nil, "", with(func(r *db.Instance) { r.State = db.InstanceReplacing }), &running, false, api.EndpointDraining, "10.0.0.5"},
		{"in terminating:wait", nil, "", with(func(r *db.Instance) { r.Hook.Hook = api.LifecycleTerminatingWait }), &running, false, api.EndpointDraining, "10.0.0.5"},
	}

	for _, c := range cases {
		shape := db.Shape{ID: 7}
		shape.Name = "web"
		shape.Health = c.health
		shape.Rollout.MinReady = c.minReady
		shape.Traffic = &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080"}
		live := map[string]backend.Serving{}
		if c.live != nil {
			live["web1"] = *c.live
		}

		drains := map[int64]time.Time{}
		if c.draining {
			drains[1] = now.Add(time.Minute)
		}

		other := db.Instance{ID: 2, ShapeID: 8, Name: "db1", State: db.InstanceCreated}
		got := Endpoints(shape, []db.Instance{c.row, other}, live, drains, now)
		want := api.DeploymentShapeEndpoint{Instance: "web1", Address: c.address, Port: 80, State: c.state}
		if len(got) != 1 || got[0] != want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, want)
		}
	}
}

func TestFrontendLeavesOutAddressless(t *testing.T) {
	checks := &api.DeploymentShapeHealth{HTTP: &api.DeploymentShapeHealthHTTP{Port: 80, Path: "/healthz"}}
	f := Frontend("default", "shop", "web", api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080"}, checks, []api.DeploymentShapeEndpoint{
		{Instance: "a", Address: "10.0.0.1", Port: 80, State: api.EndpointServing},
		{Instance: "b", Port: 80, State: api.EndpointNotReady},
	})
	if f.Key != "default/shop/web" || f.Protocol != api.TrafficProtocolHTTP || f.CheckPath != "/healthz" || len(f.Servers) != 1 || f.Servers[0].Name != "a" {
		t.Fatalf("frontend: %+v", f)
	}
}

// A health check on another port says nothing of the traffic port: the door checks "/".
func TestFrontendCheckPathOnTrafficPortOnly(t *testing.T) {
	checks := &api.DeploymentShapeHealth{HTTP: &api.DeploymentShapeHealthHTTP{Port: 9000, Path: "/healthz"}}
	f := Frontend("default", "shop", "web", api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080"}, checks, nil)
	if f.CheckPath != "" {
		t.Fatalf("check path %q", f.CheckPath)
	}
}
