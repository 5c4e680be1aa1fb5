package db

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestDeployers: a deployer's credential holds while it runs and is revoked when it ends
// or is deleted; the sweep query finds deployers whose work is over, also when their
// rollout is gone (updateAddRolloutDeployers).
func TestDeployers(t *testing.T) {
	c := newTestCluster(t)
	now := time.Now()
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		shapeID, err := createWebShape(ctx, tx)
		if err != nil {
			return err
		}

		number, err := CreateRollout(ctx, tx, shapeID, api.DeploymentRollout{Status: api.RolloutRunning, Revision: 2, Size: 1}, now)
		if err != nil {
			return err
		}

		r, err := GetRollout(ctx, tx, shapeID, number)
		if err != nil {
			return err
		}

		err = CreateDeployer(ctx, tx, r.ID, KindDeployer, "default", "web-d1-abcdef", "secret", now)
		if err != nil {
			return err
		}

		// A pre hook of the same rollout has its own credential.
		err = CreateDeployer(ctx, tx, r.ID, KindPre, "default", "web-pre1-abcdef", "hook", now)
		if err != nil {
			return err
		}

		check := func(secret string, want string, why string) {
			t.Helper()
			kind, err := CheckDeployerCredential(ctx, tx, r.ID, secret)
			if err != nil || kind != want {
				t.Errorf("%s: credential of %q (err %v), want %q", why, kind, err, want)
			}
		}

		check("secret", KindDeployer, "running")
		check("hook", KindPre, "the hook's")
		check("secreT", "", "wrong secret")
		scope, err := GetDeployerScope(ctx, tx, r.ID, KindDeployer)
		if err != nil || scope.Shape != "web" || scope.Instance != "web-d1-abcdef" || scope.Status != api.RolloutRunning {
			t.Fatalf("scope %+v, err %v", scope, err)
		}

		todo, err := GetDeployersToDelete(ctx, tx)
		if err != nil || len(todo) != 0 {
			t.Fatalf("a running deployer is not swept: %+v %v", todo, err)
		}

		paused := api.RolloutPaused
		err = UpdateRollout(ctx, tx, r.ID, api.RolloutRunning, RolloutUpdate{Status: &paused}, now)
		if err != nil {
			return err
		}

		todo, err = GetDeployersToDelete(ctx, tx)
		if err != nil || len(todo) != 0 {
			t.Fatalf("a paused rollout's hook is not swept: %+v %v", todo, err)
		}

		running := api.RolloutRunning
		err = UpdateRollout(ctx, tx, r.ID, api.RolloutPaused, RolloutUpdate{Status: &running}, now)
		if err != nil {
			return err
		}

		_, err = tx.ExecContext(ctx, "DELETE FROM deployments_shapes_rollouts_deployers WHERE kind = 'pre'")
		if err != nil {
			return err
		}

		err = SetDeployerOperation(ctx, tx, r.ID, KindDeployer, "op1")
		if err != nil {
			return err
		}

		ended, err := EndDeployer(ctx, tx, r.ID, KindDeployer, 3, "boom", now)
		if err != nil || !ended {
			t.Fatalf("end: %v %v", ended, err)
		}

		again, err := EndDeployer(ctx, tx, r.ID, KindDeployer, 0, "", now)
		if err != nil || again {
			t.Fatalf("a deployer ends once: %v %v", again, err)
		}

		check("secret", "", "ended")
		d, err := GetDeployer(ctx, tx, r.ID, KindDeployer)
		if err != nil || d.ExitCode == nil || *d.ExitCode != 3 || d.Output != "boom" || d.Operation != "op1" || !d.Revoked {
			t.Fatalf("deployer %+v, err %v", d, err)
		}

		todo, err = GetDeployersToDelete(ctx, tx)
		if err != nil || len(todo) != 1 {
			t.Fatalf("an ended deployer is swept: %+v %v", todo, err)
		}

		// A deployer whose rollout is gone (a forced shape delete) is swept too, and its
		// row goes once LXD deleted it.
		err = CreateDeployer(ctx, tx, 9999, KindPre, "default", "gone-d1-abcdef", "s2", now)
		if err != nil {
			return err
		}

		todo, err = GetDeployersToDelete(ctx, tx)
		if err != nil || len(todo) != 2 {
			t.Fatalf("a deployer of a gone rollout is swept: %+v %v", todo, err)
		}

		err = MarkDeployerDeleted(ctx, tx, r.ID, KindDeployer)
		if err != nil {
			return err
		}

		err = MarkDeployerDeleted(ctx, tx, 9999, KindPre)
		if err != nil {
			return err
		}

		kept, err := GetDeployer(ctx, tx, r.ID, KindDeployer)
		if err != nil || kept == nil || !kept.Deleted {
			t.Fatalf("the row of a kept rollout's deployer stays, deleted: %+v %v", kept, err)
		}

		gone, err := GetDeployer(ctx, tx, 9999, KindPre)
		if err != nil || gone != nil {
			t.Fatalf("the row of a gone rollout's deployer stays: %+v %v", gone, err)
		}

		_, err = GetDeployerScope(ctx, tx, 9999, KindPre)
		if !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("scope of a gone rollout: %v", err)
		}

		todo, err = GetDeployersToDelete(ctx, tx)
		if err != nil || len(todo) != 0 {
			t.Fatalf("deleted deployers are not swept again: %+v %v", todo, err)
		}

		return nil
	})
}
