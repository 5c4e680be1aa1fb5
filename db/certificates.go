package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// Certificate is a row of the trust store.
type Certificate struct {
	ID          int64
	Fingerprint string
	Type        string
	Name        string
	Certificate string // PEM
}

// API returns the certificate as LXD's API type.
func (c Certificate) API() lxdapi.Certificate {
	return lxdapi.Certificate{
		Name:        c.Name,
		Type:        c.Type,
		Certificate: c.Certificate,
		Projects:    []string{},
		Fingerprint: c.Fingerprint,
	}
}

// GetCertificates returns the whole trust store, ordered by name.
func GetCertificates(ctx context.Context, tx *sql.Tx) ([]Certificate, error) {
	rows, err := tx.QueryContext(ctx, "SELECT id, fingerprint, type, name, certificate FROM certificates ORDER BY name, fingerprint")
	if err != nil {
		return nil, fmt.Errorf("read certificates: %w", err)
	}

	defer func() { _ = rows.Close() }()

	certs := []Certificate{}
	for rows.Next() {
		var c Certificate
		err = rows.Scan(&c.ID, &c.Fingerprint, &c.Type, &c.Name, &c.Certificate)
		if err != nil {
			return nil, fmt.Errorf("read certificates: %w", err)
		}

		certs = append(certs, c)
	}

	return certs, rows.Err()
}

// GetCertificate returns the certificate whose fingerprint is, or uniquely starts with,
// fingerprint (LXD accepts prefixes too).
func GetCertificate(ctx context.Context, tx *sql.Tx, fingerprint string) (*Certificate, error) {
	if fingerprint == "" {
		return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "certificate fingerprint is required")
	}

	rows, err := tx.QueryContext(ctx, "SELECT id, fingerprint, type, name, certificate FROM certificates WHERE substr(fingerprint, 1, ?) = ? LIMIT 2", len(fingerprint), fingerprint)
	if err != nil {
		return nil, fmt.Errorf("read certificate: %w", err)
	}

	defer func() { _ = rows.Close() }()

	var found []Certificate
	for rows.Next() {
		var c Certificate
		err = rows.Scan(&c.ID, &c.Fingerprint, &c.Type, &c.Name, &c.Certificate)
		if err != nil {
			return nil, fmt.Errorf("read certificate: %w", err)
		}

		found = append(found, c)
	}

	err = rows.Err()
	if err != nil {
		return nil, err
	}

	switch len(found) {
	case 0:
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "certificate %q not found in the trust store", fingerprint)
	case 1:
		return &found[0], nil
	default:
		return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "certificate fingerprint %q is ambiguous: give more characters", fingerprint)
	}
}

// CreateCertificate adds a certificate to the trust store.
func CreateCertificate(ctx context.Context, tx *sql.Tx, c Certificate) (int64, error) {
	var exists int
	err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM certificates WHERE fingerprint = ?", c.Fingerprint).Scan(&exists)
	if err != nil {
		return 0, fmt.Errorf("check certificate: %w", err)
	}

	if exists > 0 {
		return 0, lxdapi.StatusErrorf(http.StatusConflict, "certificate %s is already in the trust store", c.Fingerprint)
	}

	result, err := tx.ExecContext(ctx, "INSERT INTO certificates (fingerprint, type, name, certificate) VALUES (?, ?, ?, ?)", c.Fingerprint, c.Type, c.Name, c.Certificate)
	if err != nil {
		return 0, fmt.Errorf("add certificate: %w", err)
	}

	return result.LastInsertId()
}

// UpdateCertificate changes a certificate's name and type.
func UpdateCertificate(ctx context.Context, tx *sql.Tx, id int64, name string, certType string) error {
	_, err := tx.ExecContext(ctx, "UPDATE certificates SET name = ?, type = ? WHERE id = ?", name, certType, id)
	if err != nil {
		return fmt.Errorf("update certificate: %w", err)
	}

	return nil
}

// DeleteCertificate removes a certificate; the deployment keys bound to it go with it.
func DeleteCertificate(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM certificates WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete certificate: %w", err)
	}

	return nil
}

// CountCertificateKeys returns how many deployment keys are bound to a certificate.
func CountCertificateKeys(ctx context.Context, tx *sql.Tx, id int64) (int, error) {
	var count int
	err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM deployments_keys WHERE certificate_id = ?", id).Scan(&count)
	if err != nil {
		return 0, fmt.Errorf("count keys of certificate: %w", err)
	}

	return count, nil
}

// CertificateToken is a pending trust token; only the hash of its secret is stored.
type CertificateToken struct {
	Name       string
	Type       string
	SecretHash string
	ExpiresAt  time.Time
}

// CreateCertificateToken records a trust token.
func CreateCertificateToken(ctx context.Context, tx *sql.Tx, token CertificateToken) error {
	_, err := tx.ExecContext(ctx, "INSERT INTO certificates_tokens (name, type, secret_hash, expires_at) VALUES (?, ?, ?, ?)", token.Name, token.Type, token.SecretHash, token.ExpiresAt.UTC())
	if err != nil {
		return fmt.Errorf("add trust token: %w", err)
	}

	return nil
}

// ConsumeCertificateToken removes and returns the unexpired token whose secret hashes to
// secretHash, so that a token can be used once only. Expired tokens are purged on the way.
func ConsumeCertificateToken(ctx context.Context, tx *sql.Tx, secretHash string, now time.Time) (*CertificateToken, error) {
	token := CertificateToken{SecretHash: secretHash}
	err := trustTokens.consume(ctx, tx, secretHash, now, "name, type, expires_at", &token.Name, &token.Type, &token.ExpiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lxdapi.StatusErrorf(http.StatusForbidden, "trust token is not valid: it is unknown, expired or already used; ask an admin for a new one")
	}

	if err != nil {
		return nil, err
	}

	return &token, nil
}
