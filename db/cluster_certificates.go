package db

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// ClusterCertificate is a cluster certificate (dqlite's TLS) in use or being rotated in.
type ClusterCertificate struct {
	ID          int64
	Fingerprint string
	Certificate string // PEM
	PrivateKey  string // PEM, "" once retired
	CreatedAt   time.Time
}

// GetClusterCertificates returns the cluster certificates not retired, oldest first.
func GetClusterCertificates(ctx context.Context, tx *sql.Tx) ([]ClusterCertificate, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, fingerprint, certificate, private_key, created_at FROM cluster_certificates WHERE retired_at IS NULL ORDER BY id")
	if err != nil {
		return nil, fmt.Errorf("read cluster certificates: %w", err)
	}

	defer func() { _ = rows.Close() }()
	certs := []ClusterCertificate{}
	for rows.Next() {
		var c ClusterCertificate
		err = rows.Scan(&c.ID, &c.Fingerprint, &c.Certificate, &c.PrivateKey, &c.CreatedAt)
		if err != nil {
			return nil, fmt.Errorf("read cluster certificates: %w", err)
		}

		certs = append(certs, c)
	}

	return certs, rows.Err()
}

// AddClusterCertificate records a cluster certificate; one already recorded is left as is.
func AddClusterCertificate(ctx context.Context, tx *sql.Tx, c ClusterCertificate, now time.Time) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO cluster_certificates (fingerprint, certificate, private_key, created_at) VALUES (?, ?, ?, ?) ON CONFLICT (fingerprint) DO NOTHING", c.Fingerprint, c.Certificate, c.PrivateKey, now.UTC())
	if err != nil {
		return fmt.Errorf("record cluster certificate: %w", err)
	}

	return nil
}

// RetireClusterCertificatesBefore retires every cluster certificate older than id and
// forgets its private key: members refuse it from then on.
func RetireClusterCertificatesBefore(ctx context.Context, tx *sql.Tx, id int64, now time.Time) error {
	_, err := tx.ExecContext(ctx, "UPDATE cluster_certificates SET retired_at = ?, private_key = '' WHERE id < ? AND retired_at IS NULL", now.UTC(), id)
	if err != nil {
		return fmt.Errorf("retire cluster certificates: %w", err)
	}

	return nil
}
