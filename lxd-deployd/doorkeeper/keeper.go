package doorkeeper

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor/waker"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Observer reads what the endpoints are computed from: the shapes with traffic, their
// instance records and drain marks, and LXD's word on each instance. The daemon's
// observer reads dqlite and LXD (NewObserver); unit tests pass a fake.
type Observer interface {
	Observe(ctx context.Context) (Observation, error)
}

// Observation is one read of everything Endpoints needs.
type Observation struct {
	// Shapes with traffic, each with its deployment's project and name.
	Shapes []ObservedShape
	// Rows are the instance records of those shapes.
	Rows []db.Instance
	// Drains are the instances marked draining, by record ID.
	Drains map[int64]time.Time
	// Live is LXD's word by project, then instance name.
	Live map[string]map[string]backend.Serving
}

// ObservedShape is one shape with traffic.
type ObservedShape struct {
	Project    string
	Deployment string
	Shape      db.Shape
}

// Notify tells /1.0/events that a shape's endpoints changed.
type Notify func(project string, deploymentID int64, event api.DeploymentShapeEndpointsEvent)

// Config is what a Keeper is built from. Door may be nil: the keeper then only computes
// endpoints and sends their events (a load balancer of the operator's follows the API),
// and a drain lasts its timeout.
type Config struct {
	Observer Observer
	Door     frontdoor.Door
	Notify   Notify
	Logger   *slog.Logger

	// ApplyEvery is how often the door is given the whole picture even when nothing
	// changed (a door restarted behind the daemon's back is refilled); default 10s.
	ApplyEvery time.Duration

	// Holds, when set, gives each private front door of a shape that may scale to zero
	// (scaling_minimum 0) a hold for the connections that arrive while it has no serving
	// instance (hold.go); Wake is then asked for capacity at a hold's first connection.
	// The keeper makes the holds itself, so that they call back into it from the start.
	Holds *waker.SetConfig
	Wake  Wake

	// Shared, when set, says the door is one several members reach (an operator's
	// HAProxy): only the holder of its lease drives it, the others follow (shared.go).
	Shared *Shared
}

// Keeper keeps the door in step with the endpoints. Every daemon runs one: a private door
// is its own member's, a shared one is driven by one member at a time (doc/traffic.md,
// "In a cluster of daemons").
type Keeper struct {
	observer   Observer
	door       frontdoor.Door
	notify     Notify
	logger     *slog.Logger
	applyEvery time.Duration
	wake       loop.Loop
	now        func() time.Time
	holds      *waker.Set
	shared     *Shared

	// holdAt is where each shape's hold listens, as the door was last given it.
	holdAt map[string]string

	mu sync.Mutex
	// driver is the context this member drives a shared door under, while it holds the
	// door's lease (nil: it follows; unused for a private door).
	driver context.Context
	// stepDown ends this member's drive of a shared door; failingSince is since when its
	// Applies have failed, steppedDownAt when it last gave the door up (shared.go).
	stepDown      context.CancelFunc
	failingSince  time.Time
	steppedDownAt time.Time
	// endpoints are the last computed endpoints by frontdoor key, with their shape.
	endpoints map[string][]api.DeploymentShapeEndpoint
	shapes    map[string]ObservedShape
	// applied is what the door was last given, by key then instance; appliedAt when.
	applied   map[string]map[string]string
	appliedAt time.Time
	// outSince is, by key then instance, since when the door has had the instance out of
	// rotation (an Apply that succeeded with it draining or not-ready).
	outSince map[string]map[string]time.Time
	// stats are the door's last figures, read at statsAt.
	stats   map[string]frontdoor.FrontendStats
	statsAt time.Time
}

// New builds a keeper.
func New(c Config) *Keeper {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}

	if c.ApplyEvery <= 0 {
		c.ApplyEvery = 10 * time.Second
	}

	if c.Notify == nil {
		c.Notify = func(string, int64, api.DeploymentShapeEndpointsEvent) {}
	}

	k := &Keeper{observer: c.Observer, door: c.Door, notify: c.Notify, logger: c.Logger, applyEvery: c.ApplyEvery, wake: loop.New(), now: time.Now,
		endpoints: map[string][]api.DeploymentShapeEndpoint{}, shapes: map[string]ObservedShape{}, applied: map[string]map[string]string{}, outSince: map[string]map[string]time.Time{},
		holdAt: map[string]string{}, shared: c.Shared}
	if c.Holds != nil {
		holds := *c.Holds
		holds.Wake, holds.Waiting = k.wakeFor(c.Wake), k.Poke
		k.holds = waker.NewSet(holds)
	}

	return k
}

// CloseHolds refuses the connections the holds keep and stops them listening: they are
// the one part of the data path through the daemon, and it is stopping.
func (k *Keeper) CloseHolds() {
	if k.holds != nil {
		k.holds.Close()
	}
}

// Poke has the keeper look now rather than at its next round (nil: no keeper).
func (k *Keeper) Poke() {
	if k != nil {
		k.wake.Poke()
	}
}

// Run keeps the door in step until ctx ends, a round each interval and on each Poke.
func (k *Keeper) Run(ctx context.Context, interval time.Duration) {
	var leased sync.WaitGroup
	if k.shared != nil && k.door != nil {
		leased.Add(1)
		go func() {
			defer leased.Done()
			k.shared.Leases.Run(ctx, k.shared.Lease, k.drive)
		}()
	}

	k.wake.Run(ctx, interval, k.logger, "front door", k.Round)
	leased.Wait()
}

// Round computes every shape's endpoints, tells /1.0/events of those that changed, gives
// the door the whole picture when anything changed or ApplyEvery passed, and reads the
// door's figures.
func (k *Keeper) Round(ctx context.Context) error {
	o, err := k.observer.Observe(ctx)
	if errors.Is(err, ErrLXDUnavailable) {
		// The door keeps the last picture (its own checks still take a dead instance out);
		// the LXD connection says once why LXD is unavailable, so this round says nothing.
		return nil
	}

	if err != nil {
		return err
	}

	now := k.now()
	current := map[string][]api.DeploymentShapeEndpoint{}
	shapesByKey := map[string]ObservedShape{}
	frontends := []frontdoor.Frontend{}
	for _, s := range o.Shapes {
		if s.Shape.Traffic == nil {
			continue
		}

		key := frontdoor.Key(s.Project, s.Deployment, s.Shape.Name)
		endpoints := Endpoints(s.Shape, o.Rows, o.Live[s.Project], o.Drains, now)
		current[key] = endpoints
		shapesByKey[key] = s
		frontends = append(frontends, Frontend(s.Project, s.Deployment, s.Shape.Name, *s.Shape.Traffic, s.Shape.Health, endpoints))
	}

	sort.Slice(frontends, func(i, j int) bool { return frontends[i].Key < frontends[j].Key })
	holdsMoved := k.syncHolds(shapesByKey, current, frontends)
	k.mu.Lock()
	changed := len(current) != len(k.endpoints) || holdsMoved
	for key, endpoints := range current {
		if !Equal(endpoints, k.endpoints[key]) {
			changed = true
			s := shapesByKey[key]
			k.notify(s.Project, s.Shape.DeploymentID, api.DeploymentShapeEndpointsEvent{Deployment: s.Deployment, Shape: s.Shape.Name, Endpoints: endpoints})
		}
	}

	k.endpoints, k.shapes = current, shapesByKey
	due := changed || now.Sub(k.appliedAt) >= k.applyEvery
	// No door until a shape has traffic: a private door's driver starts its load balancer
	// at the first Apply that names a frontend.
	idle := len(frontends) == 0 && k.appliedAt.IsZero()
	k.mu.Unlock()
	if k.door == nil || idle {
		return nil
	}

	driveCtx := k.driving(ctx)
	if driveCtx == nil {
		return k.follow(ctx, frontends)
	}

	if due {
		err = k.door.Apply(driveCtx, frontends)
		k.driveResult(err)
		if err != nil {
			return err
		}

		k.recordApplied(frontends, k.now())
	}

	stats, err := k.door.Stats(ctx)
	if err != nil {
		return err
	}

	k.mu.Lock()
	k.stats, k.statsAt = stats, k.now()
	k.mu.Unlock()
	return nil
}

// recordApplied records what an Apply that succeeded gave the door, at.
func (k *Keeper) recordApplied(frontends []frontdoor.Frontend, at time.Time) {
	k.mu.Lock()
	defer k.mu.Unlock()
	applied := map[string]map[string]string{}
	outSince := map[string]map[string]time.Time{}
	for _, f := range frontends {
		applied[f.Key] = map[string]string{}
		outSince[f.Key] = map[string]time.Time{}
		for _, s := range f.Servers {
			applied[f.Key][s.Name] = s.State
			if s.State == frontdoor.StateServing {
				continue
			}

			since, ok := k.outSince[f.Key][s.Name]
			if !ok {
				since = at
			}

			outSince[f.Key][s.Name] = since
		}
	}

	k.applied, k.outSince, k.appliedAt = applied, outSince, at
}

// Drained says whether the door has had the instance out of rotation since before its last
// figures were read and those figures show no open connection to it (fleet.Drains). An
// instance the door never had (no address) is drained once an Apply left it out.
func (k *Keeper) Drained(key string, instance string) bool {
	if k == nil || k.door == nil {
		return false
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	if k.shared != nil && (k.driver == nil || k.driver.Err() != nil) {
		return k.drainedByDoor(key, instance)
	}

	if k.appliedAt.IsZero() {
		return false
	}

	state, known := k.applied[key][instance]
	if !known {
		// Left out of the last Apply: the door sends it nothing (no address, or gone).
		_, shape := k.applied[key]
		return shape && k.statsAt.After(k.appliedAt)
	}

	since, out := k.outSince[key][instance]
	if state == frontdoor.StateServing || !out || !k.statsAt.After(since) {
		return false
	}

	return k.stats[key].Servers[instance].Sessions == 0
}

// Endpoints returns the last computed endpoints of a shape (nil before the first round).
func (k *Keeper) Endpoints(key string) []api.DeploymentShapeEndpoint {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.endpoints[key]
}

// FrontendStats returns the door's last figures by frontdoor key (a copy; none without a
// door), for the webhook's metrics events.
func (k *Keeper) FrontendStats() map[string]frontdoor.FrontendStats {
	out := map[string]frontdoor.FrontendStats{}
	if k == nil {
		return out
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	for key, s := range k.stats {
		out[key] = s
	}

	return out
}

// ShapeStats is one shape's figures for the metrics.
type ShapeStats struct {
	Project    string
	Deployment string
	Shape      string
	frontdoor.FrontendStats
}

// Stats returns the door's last figures by shape (none without a door).
func (k *Keeper) Stats() []ShapeStats {
	if k == nil {
		return nil
	}

	k.mu.Lock()
	defer k.mu.Unlock()
	out := []ShapeStats{}
	for key, s := range k.stats {
		shape, ok := k.shapes[key]
		if !ok {
			continue
		}

		out = append(out, ShapeStats{Project: shape.Project, Deployment: shape.Deployment, Shape: shape.Shape.Name, FrontendStats: s})
	}

	sort.Slice(out, func(i, j int) bool {
		return frontdoor.Key(out[i].Project, out[i].Deployment, out[i].Shape) < frontdoor.Key(out[j].Project, out[j].Deployment, out[j].Shape)
	})
	return out
}

// dbObserver reads dqlite and LXD.
type dbObserver struct {
	db  *db.Cluster
	lxd *backend.LXD
}

// ErrLXDUnavailable says an observation found LXD unavailable: a round then changes nothing.
var ErrLXDUnavailable = errors.New("LXD is unavailable")

// NewObserver returns the daemon's observer: the records from dqlite, one recursion=2
// listing per project with a shape with traffic from LXD.
func NewObserver(cluster *db.Cluster, lxd *backend.LXD) Observer {
	return dbObserver{db: cluster, lxd: lxd}
}

// Observe reads the shapes with traffic, their records and drains in one transaction,
// then LXD. With no shape with traffic it reads one count and nothing from LXD.
func (o dbObserver) Observe(ctx context.Context) (Observation, error) {
	var obs Observation
	err := o.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		obs = Observation{Live: map[string]map[string]backend.Serving{}}
		n, err := db.CountShapesWithTraffic(ctx, tx)
		if err != nil || n == 0 {
			return err
		}

		deployments, err := db.GetDeployments(ctx, tx, db.DeploymentFilter{})
		if err != nil {
			return err
		}

		byID := map[int64]db.Deployment{}
		for _, d := range deployments {
			byID[d.ID] = d
		}

		all, err := db.GetShapes(ctx, tx, db.ShapeFilter{})
		if err != nil {
			return err
		}

		for _, s := range all {
			d, ok := byID[s.DeploymentID]
			if s.Traffic == nil || !ok {
				continue
			}

			obs.Shapes = append(obs.Shapes, ObservedShape{Project: d.Project, Deployment: d.Name, Shape: s})
			rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: s.ID})
			if err != nil {
				return err
			}

			obs.Rows = append(obs.Rows, rows...)
		}

		if len(obs.Shapes) == 0 {
			return nil
		}

		obs.Drains, err = db.GetInstanceDrains(ctx, tx)
		return err
	})
	if err != nil || len(obs.Shapes) == 0 {
		return obs, err
	}

	if !o.lxd.Status().Online {
		return obs, ErrLXDUnavailable
	}

	client, err := o.lxd.Requests()
	if err != nil {
		return obs, err
	}

	for _, s := range obs.Shapes {
		if _, done := obs.Live[s.Project]; done {
			continue
		}

		listCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		live, err := backend.ListInstanceServing(listCtx, client, s.Project)
		cancel()
		if err != nil {
			return obs, err
		}

		obs.Live[s.Project] = live
	}

	return obs, nil
}
