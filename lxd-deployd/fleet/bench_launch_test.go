package fleet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// BenchmarkLaunchWrites prices the fleet's database writes of 100 concurrent launches
// (issue 20) on a real dqlite beside 200 created records: each launch's reservation, then
// its "created" record, all 100 at once, as the governor API's launches arrive and end
// together. "own" runs each write in a transaction of its own (as before group commit),
// "group" through the fleet's db.GroupCommit. The figures are the process's CPU (Go and
// dqlite's C threads alike) per launch and the wall time of the 100: CPU the daemon takes
// from LXD on a shared machine, and the queue of writers the last launch waits behind.
func BenchmarkLaunchWrites(b *testing.B) {
	const launches = 100
	e := newRestBench(b, 200, 4)
	ctx := context.Background()
	shape := refs.ShapeRef{DeploymentRef: refs.DeploymentRef{Project: "default", Name: "dep1"}, Shape: "rest0"}
	by := api.DeploymentRequestor{Name: "bench", Protocol: api.RequestorInternal}
	own := func(p *pendingLaunch, c Change) error {
		err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var outcome reservation
			_, err := e.fleet.recordLaunch(ctx, tx, p, c, &outcome)
			return err
		})
		if err == nil {
			err = e.db.Transaction(ctx, e.fleet.recordCreated(p))
		}

		return err
	}

	group := func(p *pendingLaunch, c Change) error {
		reserved, err := e.fleet.reserveLaunch(ctx, p.ref, c)
		if err == nil {
			e.fleet.inflight.Remove(p.ref.Project, p.ref.Instance)
			err = e.fleet.writes.Do(ctx, e.fleet.recordCreated(reserved))
		}

		return err
	}

	for _, mode := range []struct {
		name   string
		launch func(p *pendingLaunch, c Change) error
	}{{"own", own}, {"group", group}} {
		b.Run(mode.name, func(b *testing.B) {
			var cpu, wall time.Duration
			for i := 0; i < b.N; i++ {
				before, start := cpuTime(), time.Now()
				var wg sync.WaitGroup
				errs := make(chan error, launches)
				for n := 0; n < launches; n++ {
					wg.Add(1)
					go func(n int) {
						defer wg.Done()
						ref := refs.InstanceRef{ShapeRef: shape, Instance: fmt.Sprintf("lch-%s-%d-%d", mode.name, i, n)}
						errs <- mode.launch(&pendingLaunch{ref: ref, by: by, started: time.Now(), sized: true}, Change{By: by, Why: "bench"})
					}(n)
				}

				wg.Wait()
				cpu += cpuTime() - before
				wall += time.Since(start)
				close(errs)
				for err := range errs {
					if err != nil {
						b.Fatal(err)
					}
				}

				// Back to 200 records, outside the figures.
				err := e.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
					_, err := tx.ExecContext(ctx, "DELETE FROM deployments_shapes_instances WHERE name LIKE 'lch-%'")
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}

			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N*launches), "cpu-ms/launch")
			b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms/100")
		})
	}
}

// The created records of launches sharing a transaction each hear their own outcome: a
// record removed meanwhile (a forced delete) is refused alone, the others commit.
func TestRecordCreatedShared(t *testing.T) {
	e := newAdoptEnv(t)
	f := New(Config{DB: e.db, Owner: "test"})
	rows := make([]*pendingLaunch, 3)
	e.tx(func(ctx context.Context, tx *sql.Tx) error {
		for i := range rows {
			id, err := db.CreateInstance(ctx, tx, "default", e.shapeID, fmt.Sprintf("web%d", i), "hash", 1, "test", time.Now())
			if err != nil {
				return err
			}

			rows[i] = &pendingLaunch{row: id}
		}

		return db.DeleteInstance(ctx, tx, rows[1].row, db.InstanceCreating) // removed meanwhile
	})

	errs := make([]error, len(rows))
	var wg sync.WaitGroup
	for i, p := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f.writes.Do(context.Background(), f.recordCreated(p))
		}()
	}

	wg.Wait()
	for i, err := range errs {
		if (i == 1) != errors.Is(err, db.ErrInstanceChanged) {
			t.Errorf("record %d: %v", i, err)
		}
	}

	for _, name := range []string{"web0", "web2"} {
		got := e.instanceRows(name)
		if len(got) != 1 || got[0].State != db.InstanceCreated {
			t.Errorf("%s: %+v, want created", name, got)
		}
	}
}
