package fleet

import (
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
)

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"log/slog"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/revert"
)

// Warm pools: instances of a shape made ahead and kept stopped, so that a launch is a
// rename and a start rather than an image unpack. They are not instances of the shape (their
// own table; they never count), carry the shape's keys and delete protection in LXD plus a
// warm-pool mark, and are made from the shape's current template: one made from an older
// template is replaced, never handed out.

// WarmPool hands pool instances to launches and keeps each shape's pool at its size.
type WarmPool struct {
	db       *db.Cluster
	lxd      *backend.LXD
	inflight *Inflight
	logger   *slog.Logger
	owner    string
	wake     loop.Loop

	// listed is when a round last listed LXD, and used when a shape last had a pool (see
	// idleListEvery).
	listed time.Time
	used   time.Time
}

// idleListEvery is how often a round lists LXD when no shape has had a warm pool for that
// long: only to delete pool instances nobody records (a crash between making one and
// recording it), which can wait. Until then every round lists, so that the pool of a
// shape just deleted goes at once. A listing every round (5 s) of 1,000 instances cost
// LXD and the daemon more than their health checks (issue 20).
const idleListEvery = time.Minute

func newWarmPool(f *Fleet, wake loop.Loop) *WarmPool {
	return &WarmPool{db: f.db, lxd: f.lxd, inflight: f.inflight, logger: f.logger, owner: f.owner, wake: wake}
}

// Poke makes the pool look at the shapes now rather than at its next round.
func (w *WarmPool) Poke() {
	w.wake.Poke()
}

// create makes a reserved instance in LXD: from the warm pool when it has one of the
// shape's current template, else from the image.
func (f *Fleet) create(ctx context.Context, p *pendingLaunch) error {
	// A pool instance sits on whatever member LXD made it on: a launch that placement sent
	// to a member is made there, cold (doc/placement.md). A shape without a warm pool has
	// none to take from (what a removed pool left, its round deletes), which saves each
	// launch a transaction.
	if f.Pool != nil && p.target == "" && p.pooled {
		taken, err := f.Pool.take(ctx, p)
		if taken || err != nil {
			return err
		}
	}

	return backend.CreateInstanceOn(ctx, p.client, p.ref.Project, p.target, p.req)
}

// take turns a pool instance into the launch's instance. taken is false when there was
// none, or when the one taken failed and was removed: the caller then makes the instance
// cold. An error means a failed pool instance could not be removed.
func (w *WarmPool) take(ctx context.Context, p *pendingLaunch) (bool, error) {
	var pooled *db.PoolInstance
	err := w.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if pooled != nil {
			w.inflight.Remove(p.ref.Project, pooled.Name) // a retried transaction
		}

		var err error
		pooled, err = db.TakePoolInstance(ctx, tx, p.shapeID, p.poolHash, w.owner, time.Now())
		if pooled != nil {
			// Before the commit, so that this daemon's pool round never sees the claim
			// without the work behind it.
			w.inflight.Add(p.ref.Project, pooled.Name)
		}

		return err
	})
	if err != nil && pooled != nil {
		w.inflight.Remove(p.ref.Project, pooled.Name)
	}

	if err != nil || pooled == nil {
		return false, nil
	}

	defer w.inflight.Remove(p.ref.Project, pooled.Name)
	defer w.Poke() // refill
	// The row goes last: until then every daemon's sweep knows the instance is spoken for.
	defer func() {
		_ = w.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
			return db.DeletePoolInstance(ctx, tx, pooled.ID, db.PoolTaking)
		})
	}()

	renamed, err := backend.TakePoolInstance(ctx, p.client, p.ref.Project, pooled.Name, p.req)
	if err == nil {
		return true, nil
	}

	w.logger.Warn("warm pool instance could not be used: launching cold", "instance", pooled.Name, "err", err)
	name := pooled.Name
	if renamed {
		name = p.req.Name
	}

	cleanupErr := backend.DeleteInstance(context.WithoutCancel(ctx), p.client, p.ref.Project, name)
	if cleanupErr != nil {
		if renamed {
			return true, &backend.LeftBehindError{Err: err, Cleanup: cleanupErr}
		}

		// Still under its pool name and unrecorded: the pool's next round removes it.
		w.logger.Warn("warm pool: remove unusable pool instance", "instance", name, "err", cleanupErr)
	}

	return false, nil
}

// Run keeps the pools at their size until ctx ends (on the holder of the instances lease).
func (w *WarmPool) Run(ctx context.Context, interval time.Duration) {
	w.wake.Run(ctx, interval, w.logger, "warm pool", w.round)
}

// round brings every pool to its size (on the holder of the instances lease): observe,
// plan (PlanPools), act.
func (w *WarmPool) round(ctx context.Context) error {
	if !w.lxd.Status().Online {
		return nil
	}

	client, err := w.lxd.Conn()
	if err != nil {
		return err
	}

	v, err := w.observe(ctx, client)
	if err != nil {
		return err
	}

	plan := PlanPools(v, w.owner, time.Now())
	for _, instance := range plan.Unrecorded {
		w.logger.Info("warm pool: removing unrecorded pool instance", "instance", instance.Name, "project", instance.Project)
		_ = backend.DeleteInstance(ctx, client, instance.Project, instance.Name)
	}

	for _, row := range plan.Remove {
		w.remove(ctx, row)
	}

	for _, f := range plan.Fill {
		for i := 0; i < f.Count && ctx.Err() == nil; i++ {
			err = w.fill(ctx, f.Shape, f.Project, f.Deployment, f.Hash)
			if err != nil {
				w.logger.Warn("warm pool: make pool instance", "shape", f.Shape.Name, "err", err)
				break
			}
		}
	}

	return nil
}

// observe reads the shapes, pool and instance records, and what LXD holds.
func (w *WarmPool) observe(ctx context.Context, client *backend.Conn) (PoolView, error) {
	v := PoolView{Deployments: map[int64][2]string{}, Inflight: w.inflight.Has}
	var projects []string
	err := w.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		v.Shapes, err = db.GetShapes(ctx, tx, db.ShapeFilter{})
		if err != nil {
			return err
		}

		v.Pool, err = db.GetPoolInstances(ctx, tx, 0)
		if err != nil {
			return err
		}

		deployments, err := db.GetDeploymentRows(ctx, tx)
		if err != nil {
			return err
		}

		for _, d := range deployments {
			v.Deployments[d.ID] = [2]string{d.Project, d.Name}
		}

		projects, err = db.GetProjects(ctx, tx)
		return err
	})
	if err != nil {
		return v, err
	}

	inUse := len(v.Pool) > 0
	for _, shape := range v.Shapes {
		inUse = inUse || shape.WarmPool != nil
	}

	if inUse {
		w.used = time.Now()
	}

	if time.Since(w.used) > idleListEvery && time.Since(w.listed) < idleListEvery {
		return v, nil // nothing to plan but what a listing a minute finds
	}

	w.listed = time.Now()
	v.Live, err = TakeSnapshot(client, projects, nil)
	if err != nil {
		return v, err
	}

	v.Instances, err = w.recordedTagged(ctx, v)
	return v, err
}

// recordedTagged reads the instance records of the pool-tagged instances LXD holds that
// no pool row names: all PlanPools asks of the instance records (a launch that took a pool
// instance leaves the mark on it for a moment). Reading every record each round instead
// was most of a pool round's cost at rest (issue 20).
func (w *WarmPool) recordedTagged(ctx context.Context, v PoolView) ([]db.Instance, error) {
	pooled := map[string]bool{}
	for _, row := range v.Pool {
		pooled[SnapshotKey(row.Project, row.Name)] = true
	}

	var names []string
	for key, instance := range v.Live {
		if instance.Config[backend.ConfigWarmPool] != "" && !pooled[key] {
			names = append(names, instance.Name)
		}
	}

	var rows []db.Instance
	if len(names) == 0 {
		return rows, nil
	}

	err := w.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rows = nil
		for _, name := range names {
			named, err := db.GetInstances(ctx, tx, db.InstanceFilter{Name: name})
			if err != nil {
				return err
			}

			rows = append(rows, named...)
		}

		return nil
	})

	return rows, err
}

// fill makes one pool instance for a shape.
func (w *WarmPool) fill(ctx context.Context, shape db.Shape, project string, deployment string, hash string) error {
	client, err := w.lxd.Conn()
	if err != nil {
		return err
	}

	name := poolInstanceName(shape.Name)
	var row int64
	err = w.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		row, err = db.CreatePoolInstance(ctx, tx, shape.ID, name, hash, w.owner, time.Now())
		return err
	})
	if err != nil {
		return err
	}

	w.inflight.Add(project, name)
	defer w.inflight.Remove(project, name)
	err = backend.CreatePoolInstance(ctx, client, project, backend.InstanceRequest(shape.InstanceTemplate, name, deployment, shape.Name))
	var leftBehind *backend.LeftBehindError
	if errors.As(err, &leftBehind) {
		return err // the row stays creating; a later round removes both
	}

	return w.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		if err != nil {
			_ = db.DeletePoolInstance(ctx, tx, row, db.PoolCreating)
			return err
		}

		return db.SetPoolInstanceReady(ctx, tx, row)
	})
}

// remove deletes a pool instance in LXD, then its record. It claims the record first, so
// that no launch on another daemon takes the instance while it goes.
func (w *WarmPool) remove(ctx context.Context, row db.PoolInstance) {
	if row.State != db.PoolTaking {
		err := w.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return db.ClaimPoolInstance(ctx, tx, row.ID, row.State, w.owner, time.Now())
		})
		if err != nil {
			return // taken or changed meanwhile
		}

		row.State = db.PoolTaking
	}

	client, err := w.lxd.Conn()
	if err == nil {
		err = backend.DeleteInstance(ctx, client, row.Project, row.Name)
	}

	if err != nil {
		w.logger.Warn("warm pool: remove pool instance", "instance", row.Name, "err", err)
		return
	}

	_ = w.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.DeletePoolInstance(ctx, tx, row.ID, row.State)
	})
}

// RefillPools has the warm pool look at the shapes now rather than at its next round (a
// revised shape's pool is outdated).
func (f *Fleet) RefillPools() {
	if f != nil && f.Pool != nil {
		f.Pool.Poke()
	}
}

// poolInstanceName names a pool instance after its shape: web-w1a2b3c4.
func poolInstanceName(shape string) string {
	if len(shape) > 50 {
		shape = shape[:50]
	}

	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return shape + "-w" + hex.EncodeToString(b)
}

// remove takes a deleted instance out of LXD: back to the warm pool when the delete
// allows it and that works, else deleted.
func (f *Fleet) remove(ctx context.Context, p *pendingDelete) error {
	if p.reuse != nil && f.Pool != nil && f.Pool.giveBack(ctx, p) {
		return nil
	}

	return backend.DeleteInstance(ctx, p.client, p.ref.Project, p.row.Name)
}

// poolStopTimeout is how long a returned instance gets to shut down cleanly.
const poolStopTimeout = 30

// giveBack stops and renames a scaled-in instance into its shape's pool. On failure
// nothing of the pool stays and the caller deletes the instance (under whichever name).
func (w *WarmPool) giveBack(ctx context.Context, p *pendingDelete) bool {
	project := p.ref.Project
	if p.reuse.Image != "" {
		live, _, err := backend.ReadInstance(p.client, project, p.row.Name)
		if err != nil || live.Config["volatile.base_image"] != p.reuse.Image {
			return false // made from another image than the pool's: deleted
		}
	}

	name := poolInstanceName(p.reuse.Shape)
	w.inflight.Add(project, name)
	defer w.inflight.Remove(project, name)
	undo := revert.New()
	defer undo.Fail()
	var row int64
	err := w.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		row, err = db.CreatePoolInstance(ctx, tx, p.reuse.ShapeID, name, p.reuse.Hash, w.owner, time.Now())
		return err
	})
	if err != nil {
		return false
	}

	// The row goes last, so that no sweep takes the instance for an unrecorded one.
	undo.Add(func() {
		_ = w.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
			return db.DeletePoolInstance(ctx, tx, row, db.PoolCreating)
		})
	})

	// The rename may happen even when the return fails: the caller deletes the old name,
	// this the new one.
	undo.Add(func() {
		cleanupErr := backend.DeleteInstance(context.WithoutCancel(ctx), p.client, project, name)
		if cleanupErr != nil {
			w.logger.Warn("warm pool: remove half-returned instance", "instance", name, "err", cleanupErr)
		}
	})

	err = backend.ReturnToPool(ctx, p.client, project, p.row.Name, name, poolStopTimeout)
	if err == nil {
		err = w.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
			return db.SetPoolInstanceReady(ctx, tx, row)
		})
	}

	if err == nil {
		undo.Success()
		return true
	}

	w.logger.Warn("warm pool: could not return a scaled-in instance to the pool: deleting it", "instance", p.row.Name, "err", err)
	return false
}
