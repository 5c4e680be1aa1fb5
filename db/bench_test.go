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
	c, err := Open(context.Background(), b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}

	defer func() { _ = c.Close(context.Background()) }()
	var deploymentID int64
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
