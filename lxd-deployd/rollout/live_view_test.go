package rollout

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestLiveViewToRead: a step lists LXD when its view has no listing or an old one, or when
// too many instances need reading; else it reads exactly the instances LXD holds whose
// record changed since LXD was last asked about them, or that the view lacks.
func TestLiveViewToRead(t *testing.T) {
	t0 := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	listed := &liveView{listedAt: t0, cost: 50 * time.Millisecond, byName: map[string]liveEntry{
		"old1": {found: true, readAt: t0},
		"old2": {found: true, readAt: t0},
		"new1": {found: true, readAt: t0.Add(time.Second)},
	}}

	row := func(name string, state string, changed time.Time) db.Instance {
		return db.Instance{Name: name, State: state, StateChangedAt: changed}
	}

	many := []db.Instance{}
	for i := 0; i <= readOneByOne; i++ {
		many = append(many, row("n"+strings.Repeat("x", i), db.InstanceCreated, t0.Add(time.Second)))
	}

	tests := []struct {
		name   string
		view   *liveView
		rows   []db.Instance
		now    time.Time
		relist bool
		read   []string
	}{
		{"never listed", &liveView{}, []db.Instance{row("old1", db.InstanceCreated, t0)}, t0, true, nil},
		{"listing older than resyncEvery", listed, []db.Instance{row("old1", db.InstanceCreated, t0)}, t0.Add(resyncFloor), true, nil},
		{"nothing changed", listed, []db.Instance{row("old1", db.InstanceCreated, t0.Add(-time.Minute)), row("new1", db.InstanceCreated, t0.Add(time.Second))}, t0.Add(time.Second), false, nil},
		{"own launch made since the listing", listed, []db.Instance{row("old1", db.InstanceCreated, t0.Add(-time.Minute)), row("new2", db.InstanceCreated, t0.Add(time.Second))}, t0.Add(time.Second), false, []string{"new2"}},
		{"record changed after the listing (a delete LXD refused)", listed, []db.Instance{row("old2", db.InstanceCreated, t0.Add(time.Millisecond))}, t0.Add(time.Second), false, []string{"old2"}},
		{"creating and deleting are not read", listed, []db.Instance{row("new3", db.InstanceCreating, t0.Add(time.Second)), row("old1", db.InstanceDeleting, t0.Add(time.Second))}, t0.Add(time.Second), false, nil},
		{"more than readOneByOne: a listing", listed, many, t0.Add(time.Second), true, nil},
	}

	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			relist, read := tt.view.toRead(tt.rows, tt.now)
			if relist != tt.relist || !slices.Equal(read, tt.read) {
				t.Fatalf("toRead = %v, %v; want %v, %v", relist, read, tt.relist, tt.read)
			}
		})
	}
}

// TestLiveViewResyncEvery: the listings take at most a twentieth of LXD's time, between
// 2 s and 30 s apart.
func TestLiveViewResyncEvery(t *testing.T) {
	for cost, want := range map[time.Duration]time.Duration{
		20 * time.Millisecond:  resyncFloor,
		800 * time.Millisecond: 16 * time.Second,
		5 * time.Second:        resyncCeiling,
	} {
		got := (&liveView{cost: cost}).resyncEvery()
		if got != want {
			t.Errorf("resyncEvery after a listing of %v = %v, want %v", cost, got, want)
		}
	}
}

// fakeListing is an LXD that answers listings and GETs of its instances, and counts them.
type fakeListing struct {
	lxd.InstanceServer
	instances map[string]lxdapi.Instance
	listings  int
	gets      []string
}

func (f *fakeListing) RawQuery(method string, path string, data any, etag string) (*lxdapi.Response, string, error) {
	u, err := url.Parse(path)
	if err != nil {
		return nil, "", err
	}

	var metadata any
	if u.Path == "/1.0/instances" {
		f.listings++
		var all []lxdapi.Instance
		for _, i := range f.instances {
			all = append(all, i)
		}

		metadata = all
	} else {
		name := strings.TrimPrefix(u.Path, "/1.0/instances/")
		f.gets = append(f.gets, name)
		i, ok := f.instances[name]
		if !ok {
			return nil, "", lxdapi.StatusErrorf(http.StatusNotFound, "Instance not found")
		}

		metadata = i
	}

	raw, err := json.Marshal(metadata)
	if err != nil {
		return nil, "", err
	}

	return &lxdapi.Response{Type: lxdapi.SyncResponse, StatusCode: http.StatusOK, Metadata: raw}, "", nil
}

// DoHTTP serves RawQuery's answers as LXD's client does its raw requests (listings read
// their answer in one pass through it).
func (f *fakeListing) DoHTTP(req *http.Request) (*http.Response, error) {
	resp, _, err := f.RawQuery(req.Method, req.URL.RequestURI(), nil, "")
	if err != nil {
		code := http.StatusInternalServerError
		if status, ok := err.(lxdapi.StatusError); ok {
			code = status.Status()
		}

		resp = &lxdapi.Response{Type: lxdapi.ErrorResponse, Code: code, Error: err.Error()}
	}

	body, err := json.Marshal(resp)
	if err != nil {
		return nil, err
	}

	return &http.Response{StatusCode: http.StatusOK, Body: io.NopCloser(bytes.NewReader(body))}, nil
}

// TestLiveViewSeesItsOwnLaunches: after the first listing, a step reads only the instance
// its launch made since (never planning on a view older than its own launch), and one
// whose delete LXD refused; what it has not touched is not read again until the resync.
func TestLiveViewSeesItsOwnLaunches(t *testing.T) {
	running := func(name string) lxdapi.Instance {
		return lxdapi.Instance{Name: name, Status: "Running", StatusCode: lxdapi.Running}
	}

	fake := &fakeListing{instances: map[string]lxdapi.Instance{"old1": running("old1"), "old2": running("old2")}}
	r := db.Rollout{ID: 1, Project: "default", Deployment: "dep1", DeploymentRollout: api.DeploymentRollout{Shape: "web"}}
	views := &liveViews{}
	before := time.Now().Add(-time.Minute)
	rows := []db.Instance{{Name: "old1", State: db.InstanceCreated, StateChangedAt: before}, {Name: "old2", State: db.InstanceCreated, StateChangedAt: before}}
	live, err := views.refresh(backend.NewConn(fake), r, rows)
	if err != nil || fake.listings != 1 || len(live) != 2 {
		t.Fatalf("first refresh: %d listings, %d instances, %v; want one listing of 2", fake.listings, len(live), err)
	}

	// The step launched new1 (being created: not read) and deleted old2 (its record now
	// deleting: not read).
	fake.instances["new1"] = lxdapi.Instance{Name: "new1", Status: "Stopped", StatusCode: lxdapi.Stopped}
	rows = append(rows, db.Instance{Name: "new1", State: db.InstanceCreating, StateChangedAt: time.Now()})
	rows[1].State, rows[1].StateChangedAt = db.InstanceDeleting, time.Now()
	_, err = views.refresh(backend.NewConn(fake), r, rows)
	if err != nil || fake.listings != 1 || len(fake.gets) != 0 {
		t.Fatalf("refresh during the launch: %d listings, gets %v, %v; want nothing asked", fake.listings, fake.gets, err)
	}

	// The launch finished (new1 Running, its record created) and LXD refused old2's delete
	// (its record back to created).
	fake.instances["new1"] = running("new1")
	rows[2].State, rows[2].StateChangedAt = db.InstanceCreated, time.Now()
	rows[1].State, rows[1].StateChangedAt = db.InstanceCreated, time.Now()
	live, err = views.refresh(backend.NewConn(fake), r, rows)
	slices.Sort(fake.gets)
	if err != nil || fake.listings != 1 || !slices.Equal(fake.gets, []string{"new1", "old2"}) {
		t.Fatalf("refresh after the launch: %d listings, gets %v, %v; want new1 and old2 read", fake.listings, fake.gets, err)
	}

	if live["new1"].StatusCode != lxdapi.Running {
		t.Fatalf("new1 is %v in the view, want Running", live["new1"].Status)
	}

	// Nothing changed since: nothing is asked; an instance LXD lost is not in the view.
	fake.gets = nil
	_, err = views.refresh(backend.NewConn(fake), r, rows)
	if err != nil || fake.listings != 1 || len(fake.gets) != 0 {
		t.Fatalf("refresh with nothing changed: %d listings, gets %v, %v", fake.listings, fake.gets, err)
	}

	delete(fake.instances, "new1")
	rows[2].StateChangedAt = time.Now()
	live, err = views.refresh(backend.NewConn(fake), r, rows)
	_, ok := live["new1"]
	if err != nil || ok {
		t.Fatalf("an instance LXD no longer has is in the view (%v)", err)
	}

	// Another daemon's rollout (or none): forgotten.
	views.keep(map[int64]bool{})
	if len(views.views) != 0 {
		t.Fatal("keep left a view of a rollout this daemon no longer works on")
	}
}

// TestStepChanges: a step writes the rollout's record only when it progressed, follows a
// new revision or enters a new phase; the others (most: one after every launch and
// delete) leave the fencing to their launches' and deletes' own transactions.
func TestStepChanges(t *testing.T) {
	r := db.Rollout{DeploymentRollout: api.DeploymentRollout{Revision: 2, Phase: "replace"}}
	view := func(revision int, phase string, progress bool) *rolloutView {
		v := &rolloutView{shape: &db.Shape{}, progress: progress}
		v.shape.Revision, v.plan.Phase = revision, phase
		return v
	}

	for _, tt := range []struct {
		name string
		v    *rolloutView
		want bool
	}{
		{"nothing new", view(2, "replace", false), false},
		{"progress", view(2, "replace", true), true},
		{"a new revision", view(3, "replace", false), true},
		{"a new phase", view(2, "recreate", false), true},
	} {
		if got := stepChanges(r, tt.v); got != tt.want {
			t.Errorf("%s: stepChanges = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestNoneInPlaceFollowsTheRevision: the in-place pass's "nothing to update" holds for the
// revision it was found at only, and goes with the rollout's view.
func TestNoneInPlaceFollowsTheRevision(t *testing.T) {
	views := &liveViews{}
	if views.noneInPlace(1, 3) {
		t.Fatal("a rollout not yet asked about says nothing goes in place")
	}

	views.setNoneInPlace(1, 3)
	if !views.noneInPlace(1, 3) || views.noneInPlace(1, 4) || views.noneInPlace(2, 3) {
		t.Fatal("noneInPlace holds beyond the rollout and revision it was found for")
	}

	views.keep(map[int64]bool{})
	if views.noneInPlace(1, 3) {
		t.Fatal("noneInPlace outlived the rollout's view")
	}
}

// TestClaimRenewedOnlyWhenDue: a tick renews its own claim only once a third of its TTL
// has passed; another daemon's claim, or an expired one, always goes to the database.
func TestClaimRenewedOnlyWhenDue(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	c := columnClaim{owner: "m1", ttl: 15 * time.Second}
	for _, tt := range []struct {
		name  string
		by    string
		until time.Time
		want  bool
	}{
		{"just renewed", "m1", now.Add(15 * time.Second), true},
		{"a third gone", "m1", now.Add(10 * time.Second), false},
		{"expired", "m1", now.Add(-time.Second), false},
		{"another member's", "m2", now.Add(15 * time.Second), false},
	} {
		r := db.Rollout{ClaimedBy: tt.by, ClaimedUntil: tt.until}
		if got := c.stillHeld(r, now); got != tt.want {
			t.Errorf("%s: stillHeld = %v, want %v", tt.name, got, tt.want)
		}
	}
}
