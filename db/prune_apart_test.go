package db

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestRevisionPruneKeepsCauseApart (issue 32): 22 resize revisions after two others keep
// the two (each kind counts toward its own keep), and of the resizes only the newest keep.
func TestRevisionPruneKeepsCauseApart(t *testing.T) {
	c := newTestCluster(t)
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		shapeID, err := createWebShape(ctx, tx)
		if err != nil {
			return err
		}

		for rev := 1; rev <= 24; rev++ {
			cause := "resize"
			if rev <= 2 {
				cause = "api"
			}

			err = CreateRevision(ctx, tx, shapeID, api.DeploymentShapeRevision{Revision: rev, Cause: cause, CreatedAt: time.Now()})
			if err != nil {
				return err
			}

			err = PruneRevisions(ctx, tx, shapeID, 20, "resize")
			if err != nil {
				return err
			}
		}

		revisions, err := GetRevisions(ctx, tx, shapeID, 0)
		if err != nil {
			return err
		}

		var kept []int
		for _, r := range revisions {
			kept = append(kept, r.Revision)
		}

		want := "[24 23 22 21 20 19 18 17 16 15 14 13 12 11 10 9 8 7 6 5 2 1]"
		if fmt.Sprint(kept) != want {
			t.Fatalf("kept %v, want %s: the newest 20 resizes and both others", kept, want)
		}

		return nil
	})
}

// TestActivityPruneKeepsAdminApart (issue 32): a governor's entries beyond keep push out
// only older entries that are not an admin's; an admin's entries count toward their own.
func TestActivityPruneKeepsAdminApart(t *testing.T) {
	c := newTestCluster(t)
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		shapeID, err := createWebShape(ctx, tx)
		if err != nil {
			return err
		}

		var deploymentID int64
		err = tx.QueryRowContext(ctx, "SELECT deployment_id FROM deployments_shapes WHERE id = ?", shapeID).Scan(&deploymentID)
		if err != nil {
			return err
		}

		add := func(who string, why string) error {
			return CreateActivity(ctx, tx, deploymentID, api.DeploymentActivity{Shape: "web", Action: "revision", Who: who, Why: why, Time: time.Now()}, 3)
		}

		for i := 1; i <= 4; i++ {
			err = add(ActivityAdmin, fmt.Sprintf("admin %d", i))
			if err != nil {
				return err
			}
		}

		for i := 1; i <= 50; i++ {
			who := "governor"
			if i%10 == 0 {
				who = "autoheal"
			}

			err = add(who, fmt.Sprintf("%s %d", who, i))
			if err != nil {
				return err
			}
		}

		entries, err := GetActivity(ctx, tx, ActivityFilter{DeploymentID: deploymentID})
		if err != nil {
			return err
		}

		var whys []string
		for _, e := range entries {
			whys = append(whys, e.Why)
		}

		want := "[admin 2 admin 3 admin 4 governor 48 governor 49 autoheal 50]"
		if fmt.Sprint(whys) != want {
			t.Fatalf("kept %v, want %s", whys, want)
		}

		return nil
	})
}
