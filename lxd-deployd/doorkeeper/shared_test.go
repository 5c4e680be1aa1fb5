package doorkeeper

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// sharedDoor is one operator's HAProxy two keepers reach: what the driver applied, and
// the admin state and sessions a test sets, which both read.
type sharedDoor struct {
	mu       sync.Mutex
	servers  map[string]frontdoor.Server // by instance, as last applied
	applies  int
	out      map[string]bool
	sessions map[string]int
}

// sharedDoorView is one member's handle on the shared door.
type sharedDoorView struct {
	door *sharedDoor
	keys []string
}

func (v *sharedDoorView) Apply(_ context.Context, fs []frontdoor.Frontend) error {
	v.door.mu.Lock()
	defer v.door.mu.Unlock()
	v.door.applies++
	v.door.servers = map[string]frontdoor.Server{}
	v.keys = nil
	for _, f := range fs {
		v.keys = append(v.keys, f.Key)
		for _, s := range f.Servers {
			v.door.servers[s.Name] = s
		}
	}

	return nil
}

func (v *sharedDoorView) Follow(_ context.Context, fs []frontdoor.Frontend) error {
	v.keys = nil
	for _, f := range fs {
		v.keys = append(v.keys, f.Key)
	}

	return nil
}

func (v *sharedDoorView) Stats(context.Context) (map[string]frontdoor.FrontendStats, error) {
	v.door.mu.Lock()
	defer v.door.mu.Unlock()
	out := map[string]frontdoor.FrontendStats{}
	for _, key := range v.keys {
		fs := frontdoor.FrontendStats{Servers: map[string]frontdoor.ServerStats{}}
		for name, s := range v.door.servers {
			fs.Servers[name] = frontdoor.ServerStats{Sessions: v.door.sessions[name], Up: true, Out: v.door.out[name] || s.State != frontdoor.StateServing}
		}

		out[key] = fs
	}

	return out, nil
}

func (v *sharedDoorView) Close() error { return nil }

// handLeases hands a keeper its door's lease when the test says, and takes it back.
type handLeases struct {
	give chan context.Context
}

func (h *handLeases) Run(ctx context.Context, name string, job func(ctx context.Context, held lease.Lease)) {
	for {
		select {
		case <-ctx.Done():
			return
		case jobCtx := <-h.give:
			job(jobCtx, lease.Lease{Name: name, Holder: "m", Token: 1})
		}
	}
}

// Of two members sharing a door, only the lease holder applies; the follower computes the
// same endpoints, reads the door's figures and judges a drain by the door's admin state
// and sessions; when the holder goes, the other takes the lease and applies the whole
// picture at once.
func TestSharedDoorOneDriver(t *testing.T) {
	shape := db.Shape{ID: 7, DeploymentID: 3}
	shape.Name = "web"
	shape.Traffic = &api.DeploymentShapeTraffic{Port: 80, Backend: "web"}
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
	door := &sharedDoor{out: map[string]bool{}, sessions: map[string]int{"web1": 2}}
	leasesA, leasesB := &handLeases{give: make(chan context.Context)}, &handLeases{give: make(chan context.Context)}
	a := New(Config{Observer: observer, Door: &sharedDoorView{door: door}, ApplyEvery: time.Hour, Shared: &Shared{Leases: leasesA, Lease: "front-door/x"}})
	b := New(Config{Observer: observer, Door: &sharedDoorView{door: door}, ApplyEvery: time.Hour, Shared: &Shared{Leases: leasesB, Lease: "front-door/x"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx, time.Hour)
	go b.Run(ctx, time.Hour)
	key := frontdoor.Key("default", "shop", "web")
	round := func(k *Keeper) {
		t.Helper()
		if err := k.Round(ctx); err != nil {
			t.Fatal(err)
		}
	}

	applies := func() int { door.mu.Lock(); defer door.mu.Unlock(); return door.applies }
	round(a)
	round(b)
	if applies() != 0 || len(a.Endpoints(key)) != 2 || len(b.Endpoints(key)) != 2 {
		t.Fatalf("without a lease: %d applies, endpoints %+v %+v", applies(), a.Endpoints(key), b.Endpoints(key))
	}

	// a takes the lease: its next round applies.
	aCtx, aLost := context.WithCancel(ctx)
	leasesA.give <- aCtx
	waitFor(t, "a driving", func() bool { return a.driving(ctx) != nil })
	round(a)
	round(b)
	if applies() != 1 {
		t.Fatalf("after a took the lease: %d applies", applies())
	}

	// web1 leaves: the driver drains it at the door; the follower sees it drained once
	// the door says it is out with no session.
	observer.mu.Lock()
	observer.obs.Drains = map[int64]time.Time{1: time.Now().Add(time.Minute)}
	observer.mu.Unlock()
	round(b)
	if b.Drained(key, "web1") {
		t.Fatal("the follower calls web1 drained before the driver drained it")
	}

	round(a)
	round(b)
	if applies() != 2 || b.Drained(key, "web1") {
		t.Fatalf("drained with 2 sessions open (%d applies)", applies())
	}

	door.mu.Lock()
	door.sessions["web1"] = 0
	door.mu.Unlock()
	round(b)
	if !b.Drained(key, "web1") || b.Drained(key, "web2") {
		t.Fatalf("follower: web1 drained %v, web2 drained %v", b.Drained(key, "web1"), b.Drained(key, "web2"))
	}

	if len(b.Stats()) != 1 {
		t.Fatalf("the follower has no figures: %+v", b.Stats())
	}

	// a loses the lease (it died, or paused past it): it applies nothing more; b takes it
	// over and applies the whole picture at its first round, web3 included.
	aLost()
	waitFor(t, "a following", func() bool { return a.driving(ctx) == nil })
	observer.mu.Lock()
	observer.obs.Rows = append(append([]db.Instance{}, rows...), db.Instance{ID: 3, ShapeID: 7, Name: "web3", State: db.InstanceCreated, StateChangedAt: long})
	observer.obs.Live = map[string]map[string]backend.Serving{"default": {"web1": live["web1"], "web2": live["web2"],
		"web3": {Address: netip.MustParseAddr("10.0.0.3"), StatusCode: lxdapi.Running, LastUsedAt: long}}}
	observer.mu.Unlock()
	round(a)
	if applies() != 2 {
		t.Fatalf("a applied after it lost the lease: %d applies", applies())
	}

	leasesB.give <- ctx
	waitFor(t, "b driving", func() bool { return b.driving(ctx) != nil })
	round(b)
	door.mu.Lock()
	servers := door.servers
	door.mu.Unlock()
	if applies() != 3 || len(servers) != 3 || servers["web3"].State != frontdoor.StateServing || servers["web1"].State != frontdoor.StateDraining {
		t.Fatalf("after b took over: %d applies, %+v", applies(), servers)
	}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}

		time.Sleep(time.Millisecond)
	}
}

func TestSharedLease(t *testing.T) {
	if got := SharedLease("10.0.0.5:9999"); got != "front-door/10.0.0.5:9999" {
		t.Errorf("tcp: %s", got)
	}

	if got := SharedLease("/run/haproxy/admin.sock"); !strings.HasPrefix(got, "front-door/") || !strings.HasSuffix(got, ":/run/haproxy/admin.sock") {
		t.Errorf("unix: %s", got)
	}
}

// failingDoor is a shared door this member cannot change (its socket out of reach).
type failingDoor struct{ sharedDoorView }

func (d *failingDoor) Apply(context.Context, []frontdoor.Frontend) error {
	return errors.New("reach haproxy at 10.0.0.5:9999: connection timed out")
}

// A driver whose changes keep failing hands the lease over after StepDownAfter, and lets
// it go at once when it gets it again soon after, for a member that reaches the door.
func TestSharedDoorStepsDown(t *testing.T) {
	shape := db.Shape{ID: 7, DeploymentID: 3}
	shape.Name = "web"
	shape.Traffic = &api.DeploymentShapeTraffic{Port: 80, Backend: "web"}
	observer := &fakeObserver{obs: Observation{Shapes: []ObservedShape{{Project: "default", Deployment: "shop", Shape: shape}}, Live: map[string]map[string]backend.Serving{}}}
	leases := &handLeases{give: make(chan context.Context)}
	k := New(Config{Observer: observer, Door: &failingDoor{sharedDoorView{door: &sharedDoor{}}}, ApplyEvery: time.Hour, Shared: &Shared{Leases: leases, Lease: "front-door/x"}})
	var clock atomic.Int64
	clock.Store(time.Now().UnixNano())
	k.now = func() time.Time { return time.Unix(0, clock.Load()) }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go k.Run(ctx, time.Hour)
	leases.give <- ctx
	waitFor(t, "driving", func() bool { return k.driving(ctx) != nil })
	if err := k.Round(ctx); err == nil {
		t.Fatal("a failed Apply is no error")
	}

	clock.Add(int64(StepDownAfter / 2))
	_ = k.Round(ctx)
	if k.driving(ctx) == nil {
		t.Fatal("stepped down before StepDownAfter")
	}

	clock.Add(int64(StepDownAfter))
	_ = k.Round(ctx)
	waitFor(t, "stepped down", func() bool { return k.driving(ctx) == nil })

	// The lease comes back soon after: it is let go at once (the job returns, so the fake
	// lease loop takes a second hand-over at once).
	for i := 0; i < 2; i++ {
		select {
		case leases.give <- ctx:
		case <-time.After(10 * time.Second):
			t.Fatal("drives again right after stepping down")
		}
	}

	if k.driving(ctx) != nil {
		t.Fatal("drives again right after stepping down")
	}
}
