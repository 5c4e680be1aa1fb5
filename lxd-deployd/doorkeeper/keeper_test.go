package doorkeeper

import (
	"context"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// fakeDoor is an in-memory door: it keeps what it was given and reports the sessions a
// test sets.
type fakeDoor struct {
	mu       sync.Mutex
	applied  []frontdoor.Frontend
	applies  int
	sessions map[string]int
}

func (d *fakeDoor) Apply(_ context.Context, frontends []frontdoor.Frontend) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.applied = frontends
	d.applies++
	return nil
}

func (d *fakeDoor) Stats(context.Context) (map[string]frontdoor.FrontendStats, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]frontdoor.FrontendStats{}
	for _, f := range d.applied {
		s := frontdoor.FrontendStats{Servers: map[string]frontdoor.ServerStats{}}
		for _, server := range f.Servers {
			s.Servers[server.Name] = frontdoor.ServerStats{Sessions: d.sessions[server.Name], Up: true}
			s.Sessions += d.sessions[server.Name]
		}

		out[f.Key] = s
	}

	return out, nil
}

func (d *fakeDoor) Close() error { return nil }

type fakeObserver struct {
	mu  sync.Mutex
	obs Observation
	err error
}

func (o *fakeObserver) Observe(context.Context) (Observation, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.obs, o.err
}

// The keeper applies the picture when it changes (and not otherwise within ApplyEvery),
// sends an event per change, and calls an instance drained only once the door has had it
// out of rotation and measured no session to it since.
func TestKeeperAppliesAndDrains(t *testing.T) {
	shape := db.Shape{ID: 7, DeploymentID: 3}
	shape.Name = "web"
	shape.Traffic = &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080"}
	long := time.Now().Add(-time.Hour)
	rows := []db.Instance{
		{ID: 1, ShapeID: 7, Name: "web1", State: db.InstanceCreated, StateChangedAt: long},
		{ID: 2, ShapeID: 7, Name: "web2", State: db.InstanceCreated, StateChangedAt: long},
	}

	live := map[string]backend.Serving{
		"web1": {Address: netip.MustParseAddr("10.0.0.1"), StatusCode: lxdapi.Running, LastUsedAt: long},
		"web2": {Address: netip.MustParseAddr("10.0.0.2"), StatusCode: lxdapi.Running, LastUsedAt: long},
	}

	observer := &fakeObserver{obs: Observation{Shapes: []ObservedShape{{Project: "default", Deployment: "shop", Shape: shape}}, Rows: rows, Live: map[string]map[string]backend.Serving{"default": live}}}
	door := &fakeDoor{sessions: map[string]int{"web1": 3}}
	var events []api.DeploymentShapeEndpointsEvent
	k := New(Config{Observer: observer, Door: door, Notify: func(project string, id int64, e api.DeploymentShapeEndpointsEvent) {
		if project != "default" || id != 3 {
			t.Errorf("event for %s/%d", project, id)
		}

		events = append(events, e)
	}, ApplyEvery: time.Hour})
	ctx := context.Background()
	key := frontdoor.Key("default", "shop", "web")
	round := func() {
		t.Helper()
		err := k.Round(ctx)
		if err != nil {
			t.Fatal(err)
		}
	}

	if k.Drained(key, "web1") {
		t.Fatal("drained before the door was ever given anything")
	}

	round()
	round()
	if door.applies != 1 || len(events) != 1 || len(events[0].Endpoints) != 2 || events[0].Endpoints[0].State != api.EndpointServing {
		t.Fatalf("first rounds: %d applies, events %+v", door.applies, events)
	}

	if k.Drained(key, "web1") {
		t.Fatal("a serving instance is drained")
	}

	// web1 starts to leave: draining at the door, with sessions still open.
	observer.mu.Lock()
	observer.obs.Drains = map[int64]time.Time{1: time.Now().Add(time.Minute)}
	observer.mu.Unlock()
	round()
	if door.applies != 2 || len(events) != 2 || events[1].Endpoints[0].State != api.EndpointDraining || door.applied[0].Servers[0].State != frontdoor.StateDraining {
		t.Fatalf("drain round: %d applies, events %+v, door %+v", door.applies, events, door.applied)
	}

	if k.Drained(key, "web1") {
		t.Fatal("drained with 3 sessions open")
	}

	door.mu.Lock()
	door.sessions["web1"] = 0
	door.mu.Unlock()
	if k.Drained(key, "web1") {
		t.Fatal("drained before the door's figures were read again")
	}

	round()
	if !k.Drained(key, "web1") {
		t.Fatal("not drained with no session left")
	}

	if k.Drained(key, "web2") {
		t.Fatal("a serving instance with no session is drained")
	}

	stats := k.Stats()
	if len(stats) != 1 || stats[0].Shape != "web" || stats[0].Deployment != "shop" || len(stats[0].Servers) != 2 {
		t.Fatalf("stats: %+v", stats)
	}

	flat := k.TrafficStats()
	if len(flat) != 3 || flat[0].Instance != "" || flat[1].Instance != "web1" || flat[2].Instance != "web2" {
		t.Fatalf("metrics: %+v", flat)
	}
}

// Without a door the keeper still computes endpoints and sends their events, and never
// calls an instance drained (a drain then lasts its timeout).
func TestKeeperWithoutDoor(t *testing.T) {
	shape := db.Shape{ID: 7}
	shape.Name = "web"
	shape.Traffic = &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080"}
	observer := &fakeObserver{obs: Observation{Shapes: []ObservedShape{{Project: "default", Deployment: "shop", Shape: shape}},
		Rows: []db.Instance{{ID: 1, ShapeID: 7, Name: "web1", State: db.InstanceDeleting}}}}
	sent := 0
	k := New(Config{Observer: observer, Notify: func(string, int64, api.DeploymentShapeEndpointsEvent) { sent++ }})
	err := k.Round(context.Background())
	if err != nil {
		t.Fatal(err)
	}

	got := k.Endpoints(frontdoor.Key("default", "shop", "web"))
	if sent != 1 || len(got) != 1 || got[0].State != api.EndpointDraining {
		t.Fatalf("%d events, endpoints %+v", sent, got)
	}

	if k.Drained(frontdoor.Key("default", "shop", "web"), "web1") {
		t.Fatal("drained without a door")
	}
}

// While LXD is unavailable a round changes nothing and is no error (the door keeps its
// last picture; the LXD connection says why once): before, the loop logged a warning a
// second for as long as LXD was away.
func TestKeeperRoundWhileLXDUnavailable(t *testing.T) {
	shape := db.Shape{ID: 7, DeploymentID: 3}
	shape.Name = "web"
	shape.Traffic = &api.DeploymentShapeTraffic{Port: 80, Listen: "127.0.0.1:8080"}
	observer := &fakeObserver{obs: Observation{Shapes: []ObservedShape{{Project: "default", Deployment: "shop", Shape: shape}}, Live: map[string]map[string]backend.Serving{}}}
	door := &fakeDoor{sessions: map[string]int{}}
	k := New(Config{Observer: observer, Door: door, ApplyEvery: time.Hour})
	ctx := context.Background()
	if err := k.Round(ctx); err != nil {
		t.Fatal(err)
	}

	applies := door.applies
	observer.mu.Lock()
	observer.err = ErrLXDUnavailable
	observer.mu.Unlock()
	if err := k.Round(ctx); err != nil {
		t.Fatalf("a round while LXD is unavailable: %v", err)
	}

	if door.applies != applies || len(door.applied) != 1 {
		t.Fatalf("a round while LXD is unavailable changed the door: %d applies, %+v", door.applies-applies, door.applied)
	}

	observer.mu.Lock()
	observer.err = errors.New("database is locked")
	observer.mu.Unlock()
	if err := k.Round(ctx); err == nil {
		t.Fatal("another failure of the observation is still an error")
	}
}
