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
}

// GetMembers returns every member, ordered by name.
func GetMembers(ctx context.Context, tx *sql.Tx) ([]Member, error) {
	rows, err := tx.QueryContext(ctx, "SELECT name, address, database_address, started_at, heartbeat_at FROM members ORDER BY name")
	if err != nil {
		return nil, fmt.Errorf("read members: %w", err)
	}

	defer func() { _ = rows.Close() }()
	members := []Member{}
	for rows.Next() {
		var m Member
		err = rows.Scan(&m.Name, &m.Address, &m.DatabaseAddress, &m.StartedAt, &m.HeartbeatAt)
		if err != nil {
			return nil, fmt.Errorf("read members: %w", err)
		}

		members = append(members, m)
	}

	return members, rows.Err()
}

// GetMember returns the member called name, or a 404 that names it.
func GetMember(ctx context.Context, tx *sql.Tx, name string) (*Member, error) {
	m := Member{Name: name}
	err := tx.QueryRowContext(ctx, "SELECT address, database_address, started_at, heartbeat_at FROM members WHERE name = ?", name).Scan(&m.Address, &m.DatabaseAddress, &m.StartedAt, &m.HeartbeatAt)
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
	m := Member{DatabaseAddress: address}
	err := tx.QueryRowContext(ctx, "SELECT name, address, started_at, heartbeat_at FROM members WHERE database_address = ?", address).Scan(&m.Name, &m.Address, &m.StartedAt, &m.HeartbeatAt)
	if err != nil {
		return nil, err
	}

	return &m, nil
}

// SaveMember records a member as it starts, or updates the one with the same database
// address (a restart). A name taken by another member is a 409.
func SaveMember(ctx context.Context, tx *sql.Tx, m Member) error {
	var other string
	err := tx.QueryRowContext(ctx, "SELECT database_address FROM members WHERE name = ?", m.Name).Scan(&other)
	if err == nil && other != m.DatabaseAddress {
		return lxdapi.StatusErrorf(http.StatusConflict, "cluster member name %q is taken by the member at %s: choose another name", m.Name, other)
	}

	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("read member %q: %w", m.Name, err)
	}

	result, err := tx.ExecContext(ctx, "UPDATE members SET name = ?, address = ?, started_at = ?, heartbeat_at = ? WHERE database_address = ?", m.Name, m.Address, m.StartedAt.UTC(), m.HeartbeatAt.UTC(), m.DatabaseAddress)
	if err != nil {
		return fmt.Errorf("record member %q: %w", m.Name, err)
	}

	n, err := result.RowsAffected()
	if err != nil || n == 1 {
		return err
	}

	_, err = tx.ExecContext(ctx, "INSERT INTO members (name, address, database_address, started_at, heartbeat_at) VALUES (?, ?, ?, ?, ?)", m.Name, m.Address, m.DatabaseAddress, m.StartedAt.UTC(), m.HeartbeatAt.UTC())
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
