package db

import (
	"context"
	"database/sql"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Read sees what was committed, and never commits: a write made in it by mistake is undone.
func TestReadSeesCommitsAndCommitsNothing(t *testing.T) {
	c := newTestCluster(t)
	ctx := context.Background()
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		_, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		return err
	})

	err := c.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := GetDeploymentID(ctx, tx, "default", "dep1")
		if err != nil {
			return err
		}

		_, err = CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep2"}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	err = c.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := GetDeploymentID(ctx, tx, "default", "dep2")
		return err
	})
	if err == nil {
		t.Fatal("a write made in Read was committed")
	}
}
