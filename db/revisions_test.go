package db

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestUpgradeRecordsRevisionOne upgrades a database with a shape and instances: the shape
// gets revision 1 as it was, instances made from its current template are at revision 1,
// older ones at 0 (outdated).
func TestUpgradeRecordsRevisionOne(t *testing.T) {
	c, err := openNode(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close(context.Background()) })
	before := map[int]update{}
	for v := 1; v < 7; v++ {
		before[v] = updates[v]
	}

	template := `{"source":{"type":"image","alias":"busybox"}}`
	sum := sha256.Sum256([]byte(template))
	current := hex.EncodeToString(sum[:6])
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := applyUpdates(ctx, tx, before)
		if err != nil {
			return err
		}

		now := time.Now().UTC()
		for _, stmt := range []string{
			"INSERT INTO deployments (id, project, name) VALUES (1, 'default', 'dep1')",
			"INSERT INTO deployments_shapes (id, deployment_id, name, instance_template, scaling_minimum, scaling_maximum) VALUES (1, 1, 'web', '" + template + "', 0, 3)",
			"INSERT INTO deployments_shapes_config (deployment_shape_id, key, value) VALUES (1, 'user.tier', 'front')",
		} {
			_, err = tx.ExecContext(ctx, stmt)
			if err != nil {
				return err
			}
		}

		_, err = tx.ExecContext(ctx, "INSERT INTO deployments_shapes_instances (deployment_shape_id, name, state, template_hash, created_at) VALUES (1, 'cur', 'created', ?, ?), (1, 'old', 'created', 'abc', ?)", current, now, now)
		if err != nil {
			return err
		}

		return applyUpdates(ctx, tx, updates)
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		shape, err := GetShape(ctx, tx, 1, "web")
		if err != nil {
			return err
		}

		revisions, err := GetRevisions(ctx, tx, 1, 0)
		if err != nil {
			return err
		}

		if shape.Revision != 1 || len(revisions) != 1 || revisions[0].Shape.Config["user.tier"] != "front" || revisions[0].Shape.InstanceTemplate.Source.Alias != "busybox" || revisions[0].Instances != 1 {
			t.Fatalf("after the upgrade: shape %+v, revisions %+v", shape, revisions)
		}

		instances, err := GetInstances(ctx, tx, InstanceFilter{ShapeID: 1})
		if err != nil {
			return err
		}

		for _, i := range instances {
			if (i.Name == "cur") != (i.Revision == 1) {
				t.Fatalf("instance %s at revision %d", i.Name, i.Revision)
			}
		}

		return nil
	})
}

// createWebShape creates deployment dep1 with shape web (at most 3 instances) and returns
// the shape's id.
func createWebShape(ctx context.Context, tx *sql.Tx) (int64, error) {
	id, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
	if err != nil {
		return 0, err
	}

	return CreateShape(ctx, tx, id, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 3}})
}

func TestRevisionPruneKeepsUsedOnes(t *testing.T) {
	c := newTestCluster(t)
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		shapeID, err := createWebShape(ctx, tx)
		if err != nil {
			return err
		}

		for rev := 1; rev <= 5; rev++ {
			err = CreateRevision(ctx, tx, shapeID, api.DeploymentShapeRevision{Revision: rev, Cause: "api", CreatedAt: time.Now()})
			if err != nil {
				return err
			}

			if rev == 1 {
				_, err = CreateInstance(ctx, tx, "default", shapeID, "i1", "h", 1, "test", time.Now())
				if err != nil {
					return err
				}
			}
		}

		err = PruneRevisions(ctx, tx, shapeID, 2, "")
		if err != nil {
			return err
		}

		revisions, err := GetRevisions(ctx, tx, shapeID, 0)
		if err != nil {
			return err
		}

		var kept []int
		for _, r := range revisions {
			kept = append(kept, r.Revision)
		}

		if len(kept) != 3 || kept[0] != 5 || kept[1] != 4 || kept[2] != 1 {
			t.Fatalf("kept %v, want [5 4 1]: the newest two and the one an instance uses", kept)
		}

		return nil
	})
}

// TestRolloutClaim checks that one daemon at a time holds a rollout, until its claim
// expires, and that a finished rollout is nobody's.
func TestRolloutClaim(t *testing.T) {
	c := newTestCluster(t)
	now := time.Now()
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		shapeID, err := createWebShape(ctx, tx)
		if err != nil {
			return err
		}

		_, err = CreateRollout(ctx, tx, shapeID, api.DeploymentRollout{Status: api.RolloutRunning, Revision: 2, FromRevision: 1, Size: 2}, now)
		if err != nil {
			return err
		}

		r, err := GetActiveRollout(ctx, tx, shapeID)
		if err != nil || r == nil {
			t.Fatalf("active rollout: %+v %v", r, err)
		}

		claims := []struct {
			owner string
			at    time.Time
			want  bool
		}{
			{"a", now, true},
			{"b", now.Add(time.Second), false},
			{"a", now.Add(2 * time.Second), true},
			{"b", now.Add(20 * time.Second), true}, // a's claim (until +17s) expired
			{"a", now.Add(21 * time.Second), false},
		}

		for _, cl := range claims {
			ok, err := ClaimRollout(ctx, tx, r.ID, cl.owner, cl.at.Add(15*time.Second), cl.at)
			if err != nil || ok != cl.want {
				t.Fatalf("%s claims at %v: %v %v, want %v", cl.owner, cl.at.Sub(now), ok, err, cl.want)
			}
		}

		// Fencing: only the holder of an unexpired claim may write for the rollout, and
		// each write extends the claim.
		holds := []struct {
			owner string
			at    time.Duration
			want  error
		}{
			{"a", 22 * time.Second, ErrRolloutClaimLost}, // b took it over
			{"b", 22 * time.Second, nil},                 // extends b's claim to +37s
			{"b", 36 * time.Second, nil},                 // within the extension; now until +51s
			{"b", 52 * time.Second, ErrRolloutClaimLost}, // expired, though nobody took it
		}

		for _, h := range holds {
			at := now.Add(h.at)
			if err := HoldRolloutClaim(ctx, tx, r.ID, h.owner, at.Add(15*time.Second), at); err != h.want {
				t.Fatalf("%s holds its claim at %v: %v, want %v", h.owner, h.at, err, h.want)
			}
		}

		if ok, _ := ClaimRollout(ctx, tx, r.ID, "b", now.Add(53*time.Second).Add(15*time.Second), now.Add(53*time.Second)); !ok {
			t.Fatal("b must claim its expired claim again")
		}

		status := api.RolloutComplete
		err = UpdateRollout(ctx, tx, r.ID, api.RolloutRunning, RolloutUpdate{Status: &status}, now)
		if err != nil {
			return err
		}

		if ok, _ := ClaimRollout(ctx, tx, r.ID, "a", now.Add(time.Hour), now.Add(time.Hour)); ok {
			t.Fatal("a finished rollout must not be claimed")
		}

		if err := HoldRolloutClaim(ctx, tx, r.ID, "b", now.Add(time.Minute), now.Add(54*time.Second)); err != ErrRolloutClaimLost {
			t.Fatalf("holding the claim of a finished rollout: %v", err)
		}

		if err = UpdateRollout(ctx, tx, r.ID, api.RolloutRunning, RolloutUpdate{Status: &status}, now); err != ErrRolloutChanged {
			t.Fatalf("updating a rollout no longer running: %v", err)
		}

		return AdjustRolloutSize(ctx, tx, shapeID, 1)
	})
}
