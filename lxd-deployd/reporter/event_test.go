package reporter

import (
	"context"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Each typed action builds its own event: the action, the project and the URL of what it
// is about.
func TestActionsBuildTheirEvents(t *testing.T) {
	dep := refs.DeploymentRef{Project: "p2", Name: "shop"}
	shape := refs.ShapeRef{DeploymentRef: dep, Shape: "web"}
	instance := refs.InstanceRef{ShapeRef: shape, Instance: "web1"}
	tests := []struct {
		got  Event
		want Event
	}{
		{DeploymentCreated.Event(dep), Event{Action: "deployment-created", Project: "p2", Source: "/1.0/deployments/shop?project=p2"}},
		{KeyRenamed.Event(dep, "gov"), Event{Action: "deployment-key-renamed", Project: "p2", Source: "/1.0/deployments/shop/keys/gov?project=p2"}},
		{ManifestCreated.Event(dep, "manifest-2"), Event{Action: "deployment-manifest-created", Project: "p2", Source: "/1.0/deployments/shop/manifests/manifest-2?project=p2"}},
		{ShapeDegraded.Event(shape, nil), Event{Action: "deployment-shape-degraded", Project: "p2", Source: "/1.0/deployments/shop/shapes/web?project=p2"}},
		{InstanceCreated.Event(instance, nil), Event{Action: "deployment-instance-created", Project: "p2", Source: "/1.0/deployments/shop/shapes/web/instances/web1?project=p2"}},
		{InstanceUnreachable.Event(instance, nil), Event{Action: "deployment-instance-unreachable", Project: "p2", Source: "/1.0/deployments/shop/shapes/web/instances/web1?project=p2"}},
		{InstanceReachable.Event(instance, nil), Event{Action: "deployment-instance-reachable", Project: "p2", Source: "/1.0/deployments/shop/shapes/web/instances/web1?project=p2"}},
		{InstanceOrphaned.LXDEvent("p2", "stray"), Event{Action: "deployment-instance-orphaned", Project: "p2", Source: "/1.0/instances/stray?project=p2"}},
		{RolloutStarted.Event(shape, 3), Event{Action: "deployment-shape-rollout-started", Project: "p2", Source: "/1.0/deployments/shop/shapes/web/rollouts/3?project=p2"}},
		{InstanceCreated.Event(refs.InstanceRef{ShapeRef: refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: api.DefaultProject, Name: "shop"}, Shape: "web"}, Instance: "web1"}, nil),
			Event{Action: "deployment-instance-created", Project: api.DefaultProject, Source: "/1.0/deployments/shop/shapes/web/instances/web1"}},
	}

	for _, tt := range tests {
		if tt.got.Action != tt.want.Action || tt.got.Project != tt.want.Project || tt.got.Source != tt.want.Source || tt.got.Context != nil {
			t.Errorf("got %+v, want %+v", tt.got, tt.want)
		}
	}

	replaced := InstanceReplaced.Event(instance, map[string]any{"cause": "unhealthy"})
	if replaced.Context["cause"] != "unhealthy" {
		t.Errorf("the context goes with the event: %+v", replaced)
	}
}

// wakes counts the loops a reporter woke.
type wakes struct{ rollouts, images, pools int }

func (w *wakes) WakeRollouts() { w.rollouts++ }
func (w *wakes) WatchImages()  { w.images++ }
func (w *wakes) RefillPools()  { w.pools++ }

// A nil reporter, or one without a waker, reports and wakes nothing (tests that build
// handlers without one); one built with a waker wakes the loops shape changes concern.
func TestReporterWakesThroughItsWaker(t *testing.T) {
	var none *Reporter
	none.Send(api.DeploymentRequestor{}, 1, DeploymentCreated.Event(refs.DeploymentRef{Name: "x"}))
	none.ShapeRevised(api.DeploymentRequestor{}, refs.ShapeRef{}, 1, 2, 3)

	r := New(Config{})
	r.ShapeRevised(api.DeploymentRequestor{}, refs.ShapeRef{}, 1, 2, 3)
	w := &wakes{}
	r = New(Config{Waker: w})
	r.ShapeCreated(context.Background(), api.DeploymentRequestor{}, refs.DeploymentRef{Name: "shop"}, 1, "web", api.DeploymentShapePut{})
	r.ShapeRevised(api.DeploymentRequestor{}, refs.ShapeRef{}, 1, 2, 3)
	r.ShapeRevised(api.DeploymentRequestor{}, refs.ShapeRef{}, 1, 0, 0)
	if *w != (wakes{rollouts: 1, images: 1, pools: 1}) {
		t.Fatalf("woken: %+v", *w)
	}
}
