package db

import (
	"context"
	"database/sql"
	"testing"
)

// The rebuild of the trust store tables for "metrics" certificates keeps every certificate,
// token and deployment key (dropping certificates would otherwise cascade to the keys).
func TestUpdateAddMetricsCertificatesKeepsKeys(t *testing.T) {
	c, err := openNode(context.Background(), t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}

	defer func() { _ = c.Close(context.Background()) }()
	before := map[int]update{}
	for v := 1; v < 7; v++ {
		before[v] = updates[v]
	}

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		err := applyUpdates(ctx, tx, before)
		if err != nil {
			return err
		}

		_, err = tx.ExecContext(ctx, `
INSERT INTO certificates (id, fingerprint, type, name, certificate) VALUES (5, 'aa', 'deployments', 'gov', 'pem');
INSERT INTO certificates_tokens (name, type, secret_hash, expires_at) VALUES ('laptop', 'client', 'hash', '2030-01-01');
INSERT INTO deployments (id, project, name) VALUES (3, 'default', 'dep1');
INSERT INTO deployments_keys (deployment_id, certificate_id, name, role) VALUES (3, 5, 'k1', 'admin');
`)
		return err
	})

	tx(t, c, func(ctx context.Context, tx *sql.Tx) error { return applyUpdates(ctx, tx, updates) })
	tx(t, c, func(ctx context.Context, tx *sql.Tx) error {
		role, key, err := GetCertificateRole(ctx, tx, "aa", "default", "dep1")
		if err != nil || role != "admin" || key != "k1" {
			t.Fatalf("key lost in the update: role %q key %q err %v", role, key, err)
		}

		var tokens int
		err = tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM certificates_tokens WHERE type = 'client'").Scan(&tokens)
		if err != nil || tokens != 1 {
			t.Fatalf("tokens: %d, %v", tokens, err)
		}

		_, err = CreateCertificate(ctx, tx, Certificate{Fingerprint: "bb", Type: "metrics", Name: "prometheus", Certificate: "pem"})
		if err != nil {
			t.Fatalf("metrics certificate refused after the update: %v", err)
		}

		// Deleting the certificate still revokes its keys: the foreign key survived.
		_, err = tx.ExecContext(ctx, "DELETE FROM certificates WHERE id = 5")
		if err != nil {
			return err
		}

		var keys int
		err = tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM deployments_keys").Scan(&keys)
		if keys != 0 {
			t.Fatalf("deleting a certificate left %d keys behind", keys)
		}

		return err
	})
}
