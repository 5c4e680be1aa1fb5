package shapes

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Concurrent reservations, each placing its launch in its own transaction, spread 6
// instances 2/2/2: none reads counts without the others' committed choices.
func TestPlaceLaunchConcurrent(t *testing.T) {
	cluster := dbtest.Open(t)
	ctx := context.Background()
	var deploymentID int64
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		deploymentID, err = db.CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		put := api.DeploymentShapePut{ScalingMaximum: 6, Placement: &api.DeploymentShapePlacement{Spread: "member"}}
		_, err = db.CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: put})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	var wg sync.WaitGroup
	errs := make(chan error, 6)
	for i := range 6 {
		wg.Go(func() {
			errs <- cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
				shape, err := db.GetShape(ctx, tx, deploymentID, "web")
				if err != nil {
					return err
				}

				err = CheckGrow(shape)
				if err != nil {
					return err
				}

				row, err := db.CreateInstance(ctx, tx, "default", shape.ID, fmt.Sprintf("web%d", i), "h", 1, "n1", time.Now())
				if err != nil {
					return err
				}

				_, err = PlaceLaunch(ctx, tx, shape, row, three())
				return err
			})
		})
	}

	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}

	var counts map[string]int
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		shape, err := db.GetShape(ctx, tx, deploymentID, "web")
		if err != nil {
			return err
		}

		counts, err = db.GetShapeLocationCounts(ctx, tx, shape.ID)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	if !reflect.DeepEqual(counts, map[string]int{"m1": 2, "m2": 2, "m3": 2}) {
		t.Fatalf("6 concurrent launches placed %v, want 2/2/2", counts)
	}
}
