package doorkeeper

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor/waker"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// A shape that may go to zero gets a hold as its door's backup server; a request held
// there wakes the shape once, and is served by the instance once it serves. A shape with
// a minimum gets none.
func TestKeeperHolds(t *testing.T) {
	instance := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "awake") }))
	defer instance.Close()
	_, port, _ := net.SplitHostPort(instance.Listener.Addr().String())
	p, _ := strconv.Atoi(port)

	zero := db.Shape{ID: 7, DeploymentID: 3}
	zero.Name = "web"
	zero.ScalingMaximum = 3
	zero.Traffic = &api.DeploymentShapeTraffic{Port: p, Listen: "127.0.0.1:8080", HoldMax: 4, HoldTimeout: "20s"}
	kept := db.Shape{ID: 8, DeploymentID: 3}
	kept.Name = "api"
	kept.ScalingMinimum = 1
	kept.ScalingMaximum = 3
	kept.Traffic = &api.DeploymentShapeTraffic{Port: p, Listen: "127.0.0.1:8081"}
	observer := &fakeObserver{obs: Observation{Shapes: []ObservedShape{{Project: "default", Deployment: "shop", Shape: zero}, {Project: "default", Deployment: "shop", Shape: kept}}}}
	door := &fakeDoor{sessions: map[string]int{}}
	var mu sync.Mutex
	var woken []string
	k := New(Config{Observer: observer, Door: door, ApplyEvery: time.Hour, Holds: &waker.SetConfig{}, Wake: func(s ObservedShape, waiting func() int) {
		mu.Lock()
		woken = append(woken, s.Shape.Name)
		mu.Unlock()
	}})
	defer k.CloseHolds()
	ctx := context.Background()
	if err := k.Round(ctx); err != nil {
		t.Fatal(err)
	}

	var hold string
	for _, f := range door.applied {
		switch f.Key {
		case frontdoor.Key("default", "shop", "web"):
			hold = f.Hold
		case frontdoor.Key("default", "shop", "api"):
			if f.Hold != "" {
				t.Fatalf("a shape with scaling_minimum 1 has a hold: %+v", f)
			}
		}
	}

	if hold == "" {
		t.Fatalf("no hold for a shape that may go to zero: %+v", door.applied)
	}

	result := make(chan string, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 20 * time.Second}).Get("http://" + hold + "/")
		if err != nil {
			result <- err.Error()
			return
		}

		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		result <- string(body)
	}()

	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(woken)
		mu.Unlock()
		if n == 1 {
			break
		}

		if time.Now().After(deadline) {
			t.Fatal("the held request woke nothing")
		}

		time.Sleep(10 * time.Millisecond)
	}

	// The governor launched web1; it serves.
	long := time.Now().Add(-time.Hour)
	observer.mu.Lock()
	observer.obs.Rows = []db.Instance{{ID: 1, ShapeID: 7, Name: "web1", State: db.InstanceCreated, StateChangedAt: long}}
	observer.obs.Live = map[string]map[string]backend.Serving{"default": {"web1": {Address: netip.MustParseAddr("127.0.0.1"), StatusCode: lxdapi.Running, LastUsedAt: long}}}
	observer.mu.Unlock()
	if err := k.Round(ctx); err != nil {
		t.Fatal(err)
	}

	if got := <-result; got != "awake" {
		t.Fatalf("held request: %q", got)
	}

	if door.applies != 2 || woken[0] != "web" {
		t.Fatalf("applies %d, woken %v", door.applies, woken)
	}
}
