package db

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// BenchmarkReserveInstance measures the write transaction a launch makes before anything is
// sent to LXD: read the shape (bound check) and insert the instance row.
func BenchmarkReserveInstance(b *testing.B) {
	c := newTestCluster(b)
	var deploymentID int64
	var err error
	err = c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err = CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		_, err = CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 1 << 30}})
		return err
	})
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err = c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			shape, err := GetShape(ctx, tx, deploymentID, "web")
			if err != nil {
				return err
			}

			_, err = CreateInstance(ctx, tx, "default", shape.ID, fmt.Sprintf("i%d", i), "hash", 1, "bench", time.Now())
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkShapeCounts measures the one query a metrics scrape makes for its shape gauges:
// 1,000 shapes with 3 instances each, some outdated, waiting in a hook or unhealthy.
func BenchmarkShapeCounts(b *testing.B) {
	c := newTestCluster(b)
	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		for d := 0; d < 20; d++ {
			deploymentID, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: fmt.Sprintf("dep%d", d)}})
			if err != nil {
				return err
			}

			for s := 0; s < 50; s++ {
				shapeID, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: fmt.Sprintf("s%d", s)}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 5}})
				if err != nil {
					return err
				}

				for i := 0; i < 3; i++ {
					_, err = CreateInstance(ctx, tx, "default", shapeID, fmt.Sprintf("d%d-s%d-i%d", d, s, i), "hash", i%2, "bench", time.Now())
					if err != nil {
						return err
					}
				}
			}
		}

		return nil
	})
	if err != nil {
		b.Fatal(err)
	}

	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		err = c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			counts, err := GetShapeCounts(ctx, tx)
			if err == nil && len(counts) != 1000 {
				err = fmt.Errorf("%d shapes counted, want 1000", len(counts))
			}

			return err
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
