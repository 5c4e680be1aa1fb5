package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Key is a deployment key row with the ids other tables refer to.
type Key struct {
	ID            int64
	DeploymentID  int64
	CertificateID int64
	api.DeploymentKey
}

// KeyFilter selects deployment keys; zero fields match everything.
type KeyFilter struct {
	DeploymentID int64
	Name         string
	Fingerprint  string
}

// GetKeys returns the matching deployment keys with their certificate's fingerprint.
func GetKeys(ctx context.Context, tx *sql.Tx, filter KeyFilter) ([]Key, error) {
	var where []string
	var args []any
	if filter.DeploymentID != 0 {
		where = append(where, "k.deployment_id = ?")
		args = append(args, filter.DeploymentID)
	}

	if filter.Name != "" {
		where = append(where, "k.name = ?")
		args = append(args, filter.Name)
	}

	if filter.Fingerprint != "" {
		where = append(where, "c.fingerprint = ?")
		args = append(args, filter.Fingerprint)
	}

	query := `
SELECT k.id, k.deployment_id, k.certificate_id, k.name, k.description, k.role, c.fingerprint
  FROM deployments_keys k
  JOIN certificates c ON c.id = k.certificate_id`
	if len(where) > 0 {
		query += " WHERE " + strings.Join(where, " AND ")
	}

	rows, err := tx.QueryContext(ctx, query+" ORDER BY k.deployment_id, k.name", args...)
	if err != nil {
		return nil, fmt.Errorf("read deployment keys: %w", err)
	}

	defer func() { _ = rows.Close() }()

	keys := []Key{}
	for rows.Next() {
		var k Key
		err = rows.Scan(&k.ID, &k.DeploymentID, &k.CertificateID, &k.Name, &k.Description, &k.Role, &k.CertificateFingerprint)
		if err != nil {
			return nil, fmt.Errorf("read deployment keys: %w", err)
		}

		keys = append(keys, k)
	}

	return keys, rows.Err()
}

// GetKey returns one key of a deployment, or a 404 that names it.
func GetKey(ctx context.Context, tx *sql.Tx, deploymentID int64, name string) (*Key, error) {
	keys, err := GetKeys(ctx, tx, KeyFilter{DeploymentID: deploymentID, Name: name})
	if err != nil {
		return nil, err
	}

	if len(keys) == 0 {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "deployment key %q not found in the deployment", name)
	}

	return &keys[0], nil
}

// GetKeyNames returns the names of a deployment's keys.
func GetKeyNames(ctx context.Context, tx *sql.Tx, deploymentID int64) ([]string, error) {
	return queryStrings(ctx, tx, "SELECT name FROM deployments_keys WHERE deployment_id = ? ORDER BY name", deploymentID)
}

// keyExists reports whether the deployment has a key of that name.
func keyExists(ctx context.Context, tx *sql.Tx, deploymentID int64, name string) (bool, error) {
	var id int64
	err := tx.QueryRowContext(ctx, "SELECT id FROM deployments_keys WHERE deployment_id = ? AND name = ?", deploymentID, name).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}

	if err != nil {
		return false, fmt.Errorf("read deployment key: %w", err)
	}

	return true, nil
}

// CreateKey binds a certificate to a deployment under a name and a role. The certificate
// must be in the trust store with type "deployments".
func CreateKey(ctx context.Context, tx *sql.Tx, deploymentID int64, req api.DeploymentKeysPost) (int64, error) {
	exists, err := keyExists(ctx, tx, deploymentID, req.Name)
	if err != nil {
		return 0, err
	}

	if exists {
		return 0, lxdapi.StatusErrorf(http.StatusConflict, "deployment key %q already exists in the deployment", req.Name)
	}

	var certID int64
	var certType string
	err = tx.QueryRowContext(ctx, "SELECT id, type FROM certificates WHERE fingerprint = ?", req.CertificateFingerprint).Scan(&certID, &certType)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, lxdapi.StatusErrorf(http.StatusBadRequest, "certificate %s is not in the trust store: add it with type %q first", req.CertificateFingerprint, api.CertificateTypeDeployments)
	}

	if err != nil {
		return 0, fmt.Errorf("read certificate: %w", err)
	}

	if certType != api.CertificateTypeDeployments {
		return 0, lxdapi.StatusErrorf(http.StatusBadRequest, "certificate %s has type %q: deployment keys need a certificate of type %q", req.CertificateFingerprint, certType, api.CertificateTypeDeployments)
	}

	result, err := tx.ExecContext(ctx, "INSERT INTO deployments_keys (deployment_id, certificate_id, name, description, role) VALUES (?, ?, ?, ?, ?)",
		deploymentID, certID, req.Name, req.Description, req.Role)
	if err != nil {
		return 0, fmt.Errorf("add deployment key: %w", err)
	}

	return result.LastInsertId()
}

// UpdateKey replaces the writable fields of a deployment key.
func UpdateKey(ctx context.Context, tx *sql.Tx, id int64, put api.DeploymentKeyPut) error {
	_, err := tx.ExecContext(ctx, "UPDATE deployments_keys SET description = ?, role = ? WHERE id = ?", put.Description, put.Role, id)
	if err != nil {
		return fmt.Errorf("update deployment key: %w", err)
	}

	return nil
}

// RenameKey renames a deployment key within its deployment.
func RenameKey(ctx context.Context, tx *sql.Tx, deploymentID int64, id int64, newName string) error {
	exists, err := keyExists(ctx, tx, deploymentID, newName)
	if err != nil {
		return err
	}

	if exists {
		return lxdapi.StatusErrorf(http.StatusConflict, "deployment key %q already exists in the deployment", newName)
	}

	_, err = tx.ExecContext(ctx, "UPDATE deployments_keys SET name = ? WHERE id = ?", newName, id)
	if err != nil {
		return fmt.Errorf("rename deployment key: %w", err)
	}

	return nil
}

// DeleteKey removes a deployment key; access through it ends with the next request.
func DeleteKey(ctx context.Context, tx *sql.Tx, id int64) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM deployments_keys WHERE id = ?", id)
	if err != nil {
		return fmt.Errorf("delete deployment key: %w", err)
	}

	return nil
}

// GetCertificateRole returns the strongest role the certificate holds on a deployment
// through its keys, with the key's name, or "" when it holds none.
func GetCertificateRole(ctx context.Context, tx *sql.Tx, fingerprint string, project string, deployment string) (role string, keyName string, err error) {
	rows, err := tx.QueryContext(ctx, `
SELECT k.role, k.name
  FROM deployments_keys k
  JOIN certificates c ON c.id = k.certificate_id
  JOIN deployments d ON d.id = k.deployment_id
 WHERE c.fingerprint = ? AND d.project = ? AND d.name = ?
 ORDER BY k.role = 'admin' DESC, k.name`, fingerprint, project, deployment)
	if err != nil {
		return "", "", fmt.Errorf("read deployment keys: %w", err)
	}

	defer func() { _ = rows.Close() }()
	if rows.Next() {
		err = rows.Scan(&role, &keyName)
		if err != nil {
			return "", "", fmt.Errorf("read deployment keys: %w", err)
		}
	}

	return role, keyName, rows.Err()
}
