package health

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ttlFleet makes shape web with a ttl check and n created instances, and returns them.
func ttlFleet(t *testing.T, cluster *db.Cluster, n int) ([]db.Instance, Settings) {
	t.Helper()
	return checkedFleet(t, cluster, &api.DeploymentShapeHealth{TTL: "30s", Grace: "0s"}, n)
}

// checkedFleet makes shape web with the given checks and n created instances (web0 to
// web<n-1>), and returns them with the checks' settings.
func checkedFleet(t testing.TB, cluster *db.Cluster, checks *api.DeploymentShapeHealth, n int) ([]db.Instance, Settings) {
	t.Helper()
	var rows []db.Instance
	err := cluster.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		depID, err := db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		shapeID, err := db.CreateShape(ctx, tx, depID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: n, Health: checks}})
		if err != nil {
			return err
		}

		for i := 0; i < n; i++ {
			id, err := db.CreateInstance(ctx, tx, "default", shapeID, fmt.Sprintf("web%d", i), "hash", 1, "me", time.Now())
			if err != nil {
				return err
			}

			err = db.SetInstanceState(ctx, tx, id, db.InstanceCreating, db.InstanceCreated, "me", time.Now())
			if err != nil {
				return err
			}
		}

		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shapeID})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	settings, _ := Parse(checks)
	return rows, settings
}

// healthOf reads the instances' health records by name.
func healthOf(t *testing.T, cluster *db.Cluster, shapeID int64) map[string]db.InstanceHealth {
	t.Helper()
	byName := map[string]db.InstanceHealth{}
	err := cluster.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shapeID})
		for _, row := range rows {
			byName[row.Name] = row.Health
		}

		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	return byName
}

// TestReportsShareTransactions: reports sent at once are recorded in fewer transactions
// than reports, each answered after its batch committed, with the verdicts that moved
// told once each.
func TestReportsShareTransactions(t *testing.T) {
	cluster := dbtest.Open(t)
	rows, settings := ttlFleet(t, cluster, 40)
	var mu sync.Mutex
	txs := map[*sql.Tx]bool{}
	notified := 0
	r := &Reports{DB: cluster, Window: 100 * time.Millisecond, Batch: 16, Notify: func(context.Context, *Change) {
		mu.Lock()
		notified++
		mu.Unlock()
	}}

	var wg sync.WaitGroup
	for _, row := range rows {
		wg.Add(1)
		go func(row db.Instance) {
			defer wg.Done()
			_, err := r.Record(context.Background(), func(ctx context.Context, tx *sql.Tx) (*Change, error) {
				mu.Lock()
				txs[tx] = true
				mu.Unlock()
				return Record(ctx, tx, row, settings, Result{At: time.Now(), Passed: true, Output: "ok"})
			})
			if err != nil {
				t.Errorf("%s: %v", row.Name, err)
				return
			}

			// Answered: the report is recorded.
			if h := healthOf(t, cluster, row.ShapeID)[row.Name]; h.Status != api.HealthHealthy {
				t.Errorf("%s answered before its report was recorded: %+v", row.Name, h)
			}
		}(row)
	}

	wg.Wait()
	if len(txs) >= len(rows) || len(txs) < len(rows)/16 {
		t.Fatalf("%d reports in %d transactions: want them shared, at most 16 to one", len(rows), len(txs))
	}

	if notified != len(rows) {
		t.Fatalf("%d verdicts told, want %d", notified, len(rows))
	}
}

// TestReportsErrorReachesEveryWaiter: a batch the database refuses fails every report of
// it, and none of them is recorded.
func TestReportsErrorReachesEveryWaiter(t *testing.T) {
	cluster := dbtest.Open(t)
	rows, settings := ttlFleet(t, cluster, 5)
	r := &Reports{DB: cluster, Window: 300 * time.Millisecond}
	refused := errors.New("the database refused the batch")
	errs := make([]error, len(rows))
	var wg sync.WaitGroup
	for i, row := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.Record(context.Background(), func(ctx context.Context, tx *sql.Tx) (*Change, error) {
				if i == 2 {
					return nil, refused
				}

				return Record(ctx, tx, row, settings, Result{At: time.Now(), Passed: true})
			})
		}()
	}

	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, refused) {
			t.Errorf("report %d: %v, want the batch's error", i, err)
		}
	}

	for name, h := range healthOf(t, cluster, rows[0].ShapeID) {
		if h.CheckedAt != nil {
			t.Errorf("%s has a report recorded from a failed batch: %+v", name, h)
		}
	}
}

// TestReportsOwnErrorLeavesOthers: a report refused on its own (its instance was deleted,
// a 404) gets its error, and the other reports of its batch are recorded.
func TestReportsOwnErrorLeavesOthers(t *testing.T) {
	cluster := dbtest.Open(t)
	rows, settings := ttlFleet(t, cluster, 4)
	err := cluster.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		return db.DeleteInstance(ctx, tx, rows[1].ID, db.InstanceCreated)
	})
	if err != nil {
		t.Fatal(err)
	}

	r := &Reports{DB: cluster, Window: 300 * time.Millisecond}
	errs := make([]error, len(rows))
	var wg sync.WaitGroup
	for i, row := range rows {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = r.Record(context.Background(), func(ctx context.Context, tx *sql.Tx) (*Change, error) {
				current, err := db.GetInstance(ctx, tx, row.ShapeID, row.Name)
				if err != nil {
					return nil, err
				}

				return Record(ctx, tx, *current, settings, Result{At: time.Now(), Passed: true})
			})
		}()
	}

	wg.Wait()
	if !lxdapi.StatusErrorCheck(errs[1], http.StatusNotFound) {
		t.Fatalf("the deleted instance's report: %v, want a 404", errs[1])
	}

	after := healthOf(t, cluster, rows[0].ShapeID)
	for i, row := range rows {
		if i == 1 {
			continue
		}

		if errs[i] != nil || after[row.Name].Status != api.HealthHealthy {
			t.Errorf("%s: %v, health %+v: want its report recorded", row.Name, errs[i], after[row.Name])
		}
	}
}

// TestReportsCallerGone: a caller that gives up is answered at once, and the batcher
// carries on with the next reports.
func TestReportsCallerGone(t *testing.T) {
	cluster := dbtest.Open(t)
	rows, settings := ttlFleet(t, cluster, 1)
	r := &Reports{DB: cluster, Window: 200 * time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	record := func(ctx context.Context, tx *sql.Tx) (*Change, error) {
		return Record(ctx, tx, rows[0], settings, Result{At: time.Now(), Passed: true})
	}

	_, err := r.Record(ctx, record)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled report: %v", err)
	}

	_, err = r.Record(context.Background(), record)
	if err != nil {
		t.Fatal(err)
	}
}
