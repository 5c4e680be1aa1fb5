package db

import (
	"context"
	"database/sql"
	"net/http"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// newTestCluster opens a real single-node dqlite in a temp dir, closed at the end of the
// test: dbtest.Open for the db package's own tests, which cannot import dbtest.
func newTestCluster(t testing.TB) *Cluster {
	t.Helper()
	c, err := Open(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}

	t.Cleanup(func() { _ = c.Close(context.Background()) })
	return c
}

// tx runs f in a transaction and fails the test on error.
func tx(t *testing.T, c *Cluster, f func(ctx context.Context, tx *sql.Tx) error) {
	t.Helper()
	err := c.Transaction(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
}

func expectStatus(t *testing.T, err error, status int) {
	t.Helper()
	code, ok := lxdapi.StatusErrorMatch(err)
	if !ok || code != status {
		t.Fatalf("expected HTTP %d, got %v", status, err)
	}
}

func TestSchemaUpdatesFromEveryVersion(t *testing.T) {
	for from := 0; from <= SchemaVersion(); from++ {
		c, err := openNode(context.Background(), t.TempDir(), Options{})
		if err != nil {
			t.Fatal(err)
		}

		partial := map[int]update{}
		for v := 1; v <= from; v++ {
			partial[v] = updates[v]
		}

		tx(t, c, func(ctx context.Context, tx *sql.Tx) error { return applyUpdates(ctx, tx, partial) })
		tx(t, c, func(ctx context.Context, tx *sql.Tx) error { return applyUpdates(ctx, tx, updates) })
		tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
			version, err := schemaVersion(ctx, tx)
			if version != SchemaVersion() {
				t.Errorf("from v%d: ended at v%d, want v%d", from, version, SchemaVersion())
			}

			return err
		})

		// Applying again is a no-op.
		tx(t, c, func(ctx context.Context, tx *sql.Tx) error { return applyUpdates(ctx, tx, updates) })
		_ = c.Close(context.Background())
	}
}

func TestSchemaRefusesNewerDatabase(t *testing.T) {
	c := newTestCluster(t)
	err := c.Transaction(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		return applyUpdates(ctx, tx, map[int]update{})
	})
	if err == nil {
		t.Fatal("a database newer than the daemon must be refused")
	}
}

func TestSchemaUpdatesAreContiguous(t *testing.T) {
	for v := 1; v <= len(updates); v++ {
		if updates[v] == nil {
			t.Fatalf("schema update %d is missing", v)
		}
	}
}

func TestDeploymentLifecycleAndCascade(t *testing.T) {
	c := newTestCluster(t)
	var deploymentID, certID int64
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		deploymentID, err = CreateDeployment(ctx, tx, "default", api.DeploymentsPost{
			DeploymentPost: api.DeploymentPost{Name: "dep1"},
			DeploymentPut:  api.DeploymentPut{Description: "d", Config: map[string]string{"user.a": "b"}},
		})
		if err != nil {
			return err
		}

		certID, err = CreateCertificate(ctx, tx, Certificate{Fingerprint: "ab", Type: "deployments", Name: "gov", Certificate: "pem"})
		if err != nil {
			return err
		}

		_, err = CreateKey(ctx, tx, deploymentID, api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "k1"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}, CertificateFingerprint: "ab"})
		if err != nil {
			return err
		}

		shapeID, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{
			DeploymentShapePost: api.DeploymentShapePost{Name: "web"},
			DeploymentShapePut:  api.DeploymentShapePut{ScalingMinimum: 1, ScalingMaximum: 3, Config: map[string]string{"user.x": "y"}},
		})
		if err != nil {
			return err
		}

		_, err = tx.ExecContext(ctx, "INSERT INTO deployments_shapes_instances (deployment_shape_id, name, state, created_at) VALUES (?, 'web1', 'running', CURRENT_TIMESTAMP)", shapeID)
		return err
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		d, err := GetDeployment(ctx, tx, "default", "dep1")
		if err != nil {
			return err
		}

		shape := d.DeploymentShapes["web"]
		if d.Config["user.a"] != "b" || shape.ScalingCurrent != 1 || shape.Config["user.x"] != "y" {
			t.Errorf("unexpected deployment %+v", d)
		}

		if len(d.UsedBy) != 1 || d.UsedBy[0] != "/1.0/instances/web1" {
			t.Errorf("used_by = %v", d.UsedBy)
		}

		_, err = CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		expectStatus(t, err, http.StatusConflict)

		// The same name in another project is another deployment.
		_, err = CreateDeployment(ctx, tx, "other", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		return err
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error { return DeleteDeployment(ctx, tx, deploymentID) })
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		for _, table := range []string{"deployments_config", "deployments_keys", "deployments_shapes", "deployments_shapes_config", "deployments_shapes_instances"} {
			var count int
			err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table).Scan(&count)
			if err != nil {
				return err
			}

			if count != 0 {
				t.Errorf("%s keeps %d rows after the deployment was deleted: ON DELETE CASCADE is not enforced", table, count)
			}
		}

		_, err := GetCertificate(ctx, tx, "ab")
		return err
	})

	_ = certID
}

func TestKeysRequireDeploymentsCertificate(t *testing.T) {
	c := newTestCluster(t)
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		id, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		_, err = CreateCertificate(ctx, tx, Certificate{Fingerprint: "cc", Type: "client", Name: "admin", Certificate: "pem"})
		if err != nil {
			return err
		}

		key := api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "k1"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "admin"}}
		key.CertificateFingerprint = "cc"
		_, err = CreateKey(ctx, tx, id, key)
		expectStatus(t, err, http.StatusBadRequest)

		key.CertificateFingerprint = "unknown"
		_, err = CreateKey(ctx, tx, id, key)
		expectStatus(t, err, http.StatusBadRequest)
		return nil
	})
}

func TestDeletingCertificateRevokesKeys(t *testing.T) {
	c := newTestCluster(t)
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		id, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		certID, err := CreateCertificate(ctx, tx, Certificate{Fingerprint: "dd", Type: "deployments", Name: "gov", Certificate: "pem"})
		if err != nil {
			return err
		}

		_, err = CreateKey(ctx, tx, id, api.DeploymentKeysPost{DeploymentKeyPost: api.DeploymentKeyPost{Name: "k1"}, DeploymentKeyPut: api.DeploymentKeyPut{Role: "read-only"}, CertificateFingerprint: "dd"})
		if err != nil {
			return err
		}

		err = DeleteCertificate(ctx, tx, certID)
		if err != nil {
			return err
		}

		keys, err := GetKeys(ctx, tx, KeyFilter{Fingerprint: "dd"})
		if len(keys) != 0 {
			t.Errorf("keys survive their certificate: %+v", keys)
		}

		return err
	})
}

func TestCertificatePrefixAndTokens(t *testing.T) {
	c := newTestCluster(t)
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		for _, fp := range []string{"aa11", "aa22"} {
			_, err := CreateCertificate(ctx, tx, Certificate{Fingerprint: fp, Type: "client", Name: fp, Certificate: "pem"})
			if err != nil {
				return err
			}
		}

		_, err := GetCertificate(ctx, tx, "aa")
		expectStatus(t, err, http.StatusBadRequest)

		cert, err := GetCertificate(ctx, tx, "aa2")
		if err != nil || cert.Fingerprint != "aa22" {
			t.Errorf("prefix lookup: %v %v", cert, err)
		}

		_, err = CreateCertificate(ctx, tx, Certificate{Fingerprint: "aa11", Type: "client", Name: "dup", Certificate: "pem"})
		expectStatus(t, err, http.StatusConflict)
		return nil
	})
}

func TestTrustTokenIsSingleUseAndExpires(t *testing.T) {
	c := newTestCluster(t)
	now := time.Now()
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := CreateCertificateToken(ctx, tx, CertificateToken{Name: "laptop", Type: "client", SecretHash: "h1", ExpiresAt: now.Add(time.Hour)})
		if err != nil {
			return err
		}

		return CreateCertificateToken(ctx, tx, CertificateToken{Name: "old", Type: "client", SecretHash: "h2", ExpiresAt: now.Add(-time.Minute)})
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		token, err := ConsumeCertificateToken(ctx, tx, "h1", now)
		if err != nil || token.Name != "laptop" {
			t.Fatalf("consume: %v %v", token, err)
		}

		_, err = ConsumeCertificateToken(ctx, tx, "h1", now)
		expectStatus(t, err, http.StatusForbidden)

		_, err = ConsumeCertificateToken(ctx, tx, "h2", now)
		expectStatus(t, err, http.StatusForbidden)
		return nil
	})
}

func TestWebhookQueue(t *testing.T) {
	c := newTestCluster(t)
	now := time.Now()
	var deploymentID int64
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		deploymentID, err = CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}, DeploymentPut: api.DeploymentPut{GovernorWebhookURL: "http://127.0.0.1:1/hook"}})
		if err != nil {
			return err
		}

		err = SetWebhookSecret(ctx, tx, deploymentID, "s3cret")
		if err != nil {
			return err
		}

		for i, uuid := range []string{"a", "b"} {
			err = EnqueueDelivery(ctx, tx, deploymentID, uuid, "ping", []byte(`{}`), now.Add(time.Duration(i)*time.Hour))
			if err != nil {
				return err
			}
		}

		return nil
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		due, err := ClaimDueDeliveries(ctx, tx, "node1", now, time.Minute, 10)
		if err != nil {
			return err
		}

		if len(due) != 1 || due[0].UUID != "a" || due[0].Secret != "s3cret" || due[0].URL != "http://127.0.0.1:1/hook" {
			t.Fatalf("due: %+v", due)
		}

		// A claimed delivery is not handed to a second daemon while the lease runs.
		again, err := ClaimDueDeliveries(ctx, tx, "node2", now, time.Minute, 10)
		if err != nil || len(again) != 0 {
			t.Fatalf("claimed twice: %+v %v", again, err)
		}

		next, err := NextDeliveryDue(ctx, tx)
		if err != nil || !next.Equal(now.UTC().Truncate(0)) && next.Sub(now).Abs() > time.Second {
			t.Fatalf("next due %v, %v", next, err)
		}

		err = RecordDeliveryAttempt(ctx, tx, due[0].ID, "node1", DeliveryAttempt{Status: DeliveryDelivered, ResponseCode: 200, At: now, NextAttempt: now})
		if err != nil {
			return err
		}

		list, err := GetDeliveries(ctx, tx, deploymentID, 10)
		if err != nil || len(list) != 2 || list[1].Status != DeliveryDelivered || list[1].Attempts != 1 || list[1].DeliveredAt == nil {
			t.Fatalf("deliveries: %+v %v", list, err)
		}

		return RedeliverDelivery(ctx, tx, due[0].ID, now)
	})
}

func TestInstanceStateIsCompareAndSet(t *testing.T) {
	c := newTestCluster(t)
	var id int64
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := CreateDeployment(ctx, tx, "default", api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}})
		if err != nil {
			return err
		}

		shapeID, err := CreateShape(ctx, tx, deploymentID, api.DeploymentShapesPost{DeploymentShapePost: api.DeploymentShapePost{Name: "web"}, DeploymentShapePut: api.DeploymentShapePut{ScalingMaximum: 2}})
		if err != nil {
			return err
		}

		id, err = CreateInstance(ctx, tx, "default", shapeID, "web1", "h", 1, "node1", time.Now())
		return err
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := SetInstanceState(ctx, tx, id, InstanceCreated, InstanceDeleting, "node2", time.Now())
		if err != ErrInstanceChanged {
			t.Fatalf("a change from the wrong state must be refused: %v", err)
		}

		err = SetInstanceState(ctx, tx, id, InstanceCreating, InstanceCreated, "node2", time.Now())
		if err != nil {
			return err
		}

		rows, err := GetInstances(ctx, tx, InstanceFilter{})
		if err != nil || rows[0].Owner != "node2" || rows[0].State != InstanceCreated {
			t.Fatalf("rows: %+v %v", rows, err)
		}

		if DeleteInstance(ctx, tx, id, InstanceCreating) != ErrInstanceChanged {
			t.Fatal("deleting a record in another state must be refused")
		}

		return DeleteInstance(ctx, tx, id, InstanceCreated)
	})
}
