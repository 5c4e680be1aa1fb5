package rollout

import (
	"sync"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
)

// A rollout steps after each of its launches and deletes (pokeWhenDone), and each step
// needs LXD's status of the shape's instances. LXD 5.0 renders every instance of the
// project for a listing, filter= or not: about 1 s of LXD's CPU with 1,000 instances,
// which a rollout of 100 paid about 200 times, on the cores its own creates needed
// (issue 20: 2.35 times the same LXD work done directly). So the engine keeps what it last
// read of a rollout's instances (a liveView) and, between listings, asks LXD only about
// the instances whose record changed since it last read them: its own launches once they
// are made, a delete LXD refused. A step therefore never plans on a view older than what
// it did itself. What changes behind the daemon's back (a container stopped by hand) is
// seen at the next listing, at most resyncCeiling later (sooner through a health check,
// whose verdict is in the record).
const (
	// resyncFloor is the least time between two listings of a rollout's instances.
	resyncFloor = 2 * time.Second

	// resyncCeiling is the most: an instance stopped behind the daemon's back counts as
	// ready at most this long.
	resyncCeiling = 30 * time.Second

	// resyncShare bounds the share of LXD's time the listings take: a listing that took
	// d is not made again before resyncShare*d. At 10, a rollout of 100 beside 1,000
	// running containers still cost LXD 1.24 times the same work done directly.
	resyncShare = 20

	// readOneByOne is how many instances a step reads one by one before a listing is the
	// cheaper call (a GET renders one instance, with a request's overhead).
	readOneByOne = 16
)

// liveEntry is one instance as LXD last told the engine.
type liveEntry struct {
	instance lxdapi.Instance
	found    bool
	readAt   time.Time // when LXD was asked
}

// liveView is what the engine last read of a rollout's instances in LXD.
type liveView struct {
	listedAt time.Time     // when the last listing was asked for (zero: never)
	cost     time.Duration // how long it took
	byName   map[string]liveEntry

	// noneInPlace is the shape revision for which the in-place pass found nothing to
	// update (0: not asked yet): outdated instances do not become updatable in place
	// while the rollout's target stays the same.
	noneInPlace int
}

// resyncEvery is how old the view's listing may grow before the next step lists again.
func (v *liveView) resyncEvery() time.Duration {
	return min(resyncCeiling, max(resyncFloor, resyncShare*v.cost))
}

// toRead says what a step must ask LXD before it plans on the view: a listing (relist)
// when the view has none or it is older than resyncEvery, or too many instances need
// reading; else the names of the rows (those LXD holds: recorded as created) whose record
// changed since LXD was last asked about them, or that the view lacks.
func (v *liveView) toRead(rows []db.Instance, now time.Time) (relist bool, names []string) {
	if v.listedAt.IsZero() || now.Sub(v.listedAt) >= v.resyncEvery() {
		return true, nil
	}

	for _, row := range rows {
		if row.State != db.InstanceCreated {
			continue
		}

		entry, ok := v.byName[row.Name]
		if !ok || row.StateChangedAt.After(entry.readAt) {
			names = append(names, row.Name)
		}
	}

	if len(names) > readOneByOne {
		return true, nil
	}

	return false, names
}

// listed replaces the view with a listing asked for at started.
func (v *liveView) listed(live map[string]lxdapi.Instance, started time.Time, cost time.Duration) {
	v.listedAt, v.cost = started, cost
	v.byName = make(map[string]liveEntry, len(live))
	for name, instance := range live {
		v.byName[name] = liveEntry{instance: instance, found: true, readAt: started}
	}
}

// read records one instance read at started (found false: LXD has none by that name).
func (v *liveView) read(name string, instance lxdapi.Instance, found bool, started time.Time) {
	v.byName[name] = liveEntry{instance: instance, found: found, readAt: started}
}

// instances is the view as a listing would return it: the instances LXD holds, by name.
func (v *liveView) instances() map[string]lxdapi.Instance {
	out := make(map[string]lxdapi.Instance, len(v.byName))
	for name, entry := range v.byName {
		if entry.found {
			out[name] = entry.instance
		}
	}

	return out
}

// liveViews are the engine's views, by rollout.
type liveViews struct {
	mu    sync.Mutex
	views map[int64]*liveView
}

// keep forgets the views of rollouts other than those this daemon works on now.
func (l *liveViews) keep(ids map[int64]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for id := range l.views {
		if !ids[id] {
			delete(l.views, id)
		}
	}
}

// view returns rollout id's view, made when missing; the caller holds l.mu.
func (l *liveViews) view(id int64) *liveView {
	if l.views == nil {
		l.views = map[int64]*liveView{}
	}

	v := l.views[id]
	if v == nil {
		v = &liveView{}
		l.views[id] = v
	}

	return v
}

// noneInPlace says whether the in-place pass found nothing to update in place for rollout
// id at shape revision revision.
func (l *liveViews) noneInPlace(id int64, revision int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.view(id).noneInPlace == revision
}

// setNoneInPlace records that the in-place pass found nothing to update for rollout id at
// shape revision revision.
func (l *liveViews) setNoneInPlace(id int64, revision int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.view(id).noneInPlace = revision
}

// refresh brings r's view up to what rows need (toRead) and returns LXD's instances of the
// shape as it now stands.
func (l *liveViews) refresh(client *backend.Conn, r db.Rollout, rows []db.Instance) (map[string]lxdapi.Instance, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v := l.view(r.ID)
	relist, names := v.toRead(rows, time.Now())
	if relist {
		want := shapes.CreatedNames(rows)

		started := time.Now()
		live, err := backend.ListShapeInstances(client, r.Project, r.Deployment, r.Shape, want)
		if err != nil {
			return nil, err
		}

		v.listed(live, started, time.Since(started))
		return v.instances(), nil
	}

	for _, name := range names {
		started := time.Now()
		instance, found, err := backend.GetInstance(client, r.Project, name)
		if err != nil {
			return nil, err
		}

		v.read(name, instance, found, started)
	}

	return v.instances(), nil
}
