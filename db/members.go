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

// Member is a daemon of the cluster: its name, HTTPS API address, dqlite address, when its
// process started and the last time it said it was alive.
type Member struct {
	Name            string
	Address         string
	DatabaseAddress string
	StartedAt       time.Time
	HeartbeatAt     time.Time

	// Certificate is the member's own PEM certificate, which other members accept from it
	// (and it from them) while this row exists; CertificateFingerprint is its SHA-256.
	Certificate            string
	CertificateFingerprint string

	// ClusterFingerprint is the cluster certificate (dqlite's TLS) the member presents
	// now; ClusterAccepted the newest one it accepts from peers (a rotation's progress).
	ClusterFingerprint string
	ClusterAccepted    string
}

// memberColumns are the columns scanMember reads, in its order.
const memberColumns = "name, address, database_address, started_at, heartbeat_at, certificate, certificate_fingerprint, cluster_fingerprint, cluster_accepted"

type scanner interface{ Scan(dest ...any) error }

func scanMember(row scanner) (Member, error) {
	var m Member
	err := row.Scan(&m.Name, &m.Address, &m.DatabaseAddress, &m.StartedAt, &m.HeartbeatAt, &m.Certificate, &m.CertificateFingerprint, &m.ClusterFingerprint, &m.ClusterAccepted)
	return m, err
}

// GetMembers returns every member, ordered by name.
func GetMembers(ctx context.Context, tx *sql.Tx) ([]Member, error) {
	rows, err := tx.QueryContext(ctx, "SELECT "+memberColumns+" FROM members ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}

	defer func() { _ = rows.Close() }()
	members := []Member{}
	for rows.Next() {
		m, err := scanMember(rows)
		if err != nil {
			return nil, fmt.Errorf("read members: %w", err)
		}

		members = append(members, m)
	}

	return members, rows.Err()
}

// GetMember returns the member called name, or a 404 that names it.
func GetMember(ctx context.Context, tx *sql.Tx, name string) (*Member, error) {
	m, err := scanMember(tx.QueryRowContext(ctx, "SELECT "+memberColumns+" FROM members WHERE name = ?", name))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, lxdapi.StatusErrorf(http.StatusNotFound, "cluster member %q not found: `lxd-deploy cluster list` shows the members", name)
	}

	if err != nil {
		return nil, fmt.Errorf("read member %q: %w", name, err)
	}

	return &m, nil
}

// GetMemberByDatabaseAddress returns the member whose dqlite listens on address, or
// sql.ErrNoRows.
func GetMemberByDatabaseAddress(ctx context.Context, tx *sql.Tx, address string) (*Member, error) {
	m, err := scanMember(tx.QueryRowContext(ctx, "SELECT "+memberColumns+" FROM members WHERE database_address = ?", address))
	if err != nil {
		return nil, err
	}

	return &m, nil
}

// GetMemberByFingerprint returns the member whose own certificate has this fingerprint, or
// sql.ErrNoRows: a removed member's certificate finds nothing.
func GetMemberByFingerprint(ctx context.Context, tx *sql.Tx, fingerprint string) (*Member, error) {
	if fingerprint == "" {
		return nil, sql.ErrNoRows
	}

	m, err := scanMember(tx.QueryRowContext(ctx, "SELECT "+memberColumns+" FROM members WHERE certificate_fingerprint = ?", fingerprint))
	if err != nil {
		return nil, err
	}

	return &m, nil
}

// SetMemberClusterFingerprint records which cluster certificate a member uses now.
func SetMemberClusterFingerprint(ctx context.Context, tx *sql.Tx, databaseAddress string, fingerprint string) error {
	_, err := tx.ExecContext(ctx, "UPDATE members SET cluster_fingerprint = ? WHERE database_address = ?", fingerprint, databaseAddress)
	if err != nil {
		return fmt.Errorf("record member cluster certificate: %w", err)
	}

	return nil
}

// SaveMember records a member as it starts, or updates the one with the same database
// address (a restart), with its certificate. A name taken by another member is a 409.
// A join token issued for the name is spent: the member has joined.
func SaveMember(ctx context.Context, tx *sql.Tx, m Member) error {
	var other string
	err := tx.QueryRowContext(ctx, "SELECT database_address FROM members WHERE name = ?", m.Name).Scan(&other)
	if err == nil && other != m.DatabaseAddress {
		return lxdapi.StatusErrorf(http.StatusConflict, "cluster member name %q is taken by the member at %s: choose another name", m.Name, other)
	}

	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read member %q: %w", m.Name, err)
	}

	result, err := tx.ExecContext(ctx, "UPDATE members SET name = ?, address = ?, started_at = ?, heartbeat_at = ?, certificate = ?, certificate_fingerprint = ?, cluster_fingerprint = ? WHERE database_address = ?",
		m.Name, m.Address, m.StartedAt.UTC(), m.HeartbeatAt.UTC(), m.Certificate, m.CertificateFingerprint, m.ClusterFingerprint, m.DatabaseAddress)
	if err != nil {
		return fmt.Errorf("record member %q: %w", m.Name, err)
	}

	_, err = tx.ExecContext(ctx, "DELETE FROM cluster_join_tokens WHERE name = ?", m.Name)
	if err != nil {
		return fmt.Errorf("spend the join token of member %q: %w", m.Name, err)
	}

	n, err := result.RowsAffected()
	if err != nil || n == 1 {
		return err
	}

	_, err = tx.ExecContext(ctx, "INSERT INTO members (name, address, database_address, started_at, heartbeat_at, certificate, certificate_fingerprint, cluster_fingerprint) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		m.Name, m.Address, m.DatabaseAddress, m.StartedAt.UTC(), m.HeartbeatAt.UTC(), m.Certificate, m.CertificateFingerprint, m.ClusterFingerprint)
	if err != nil {
		return fmt.Errorf("record member %q: %w", m.Name, err)
	}

	return nil
}

// MemberHeartbeat records that the member with this database address is alive at now,
// and reports false when there is no such member (it was removed from the cluster).
func MemberHeartbeat(ctx context.Context, tx *sql.Tx, databaseAddress string, now time.Time) (bool, error) {
	result, err := tx.ExecContext(ctx, "UPDATE members SET heartbeat_at = ? WHERE database_address = ?", now.UTC(), databaseAddress)
	if err != nil {
		return false, fmt.Errorf("record heartbeat: %w", err)
	}

	n, err := result.RowsAffected()
	return n == 1, err
}

// DeleteMember forgets a member.
func DeleteMember(ctx context.Context, tx *sql.Tx, name string) error {
	_, err := tx.ExecContext(ctx, "DELETE FROM members WHERE name = ?", name)
	if err != nil {
		return fmt.Errorf("delete member %q: %w", name, err)
	}

	return nil
}

// SetMemberClusterAccepted records the newest cluster certificate a member accepts.
func SetMemberClusterAccepted(ctx context.Context, tx *sql.Tx, databaseAddress string, fingerprint string) error {
	_, err := tx.ExecContext(ctx, "UPDATE members SET cluster_accepted = ? WHERE database_address = ?", fingerprint, databaseAddress)
	if err != nil {
		return fmt.Errorf("record member cluster certificate: %w", err)
	}

	return nil
}
