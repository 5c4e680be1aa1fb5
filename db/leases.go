package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ErrLeaseHeld says another holder has the lease and it has not expired.
var ErrLeaseHeld = errors.New("lease is held by another member")

// ErrLeaseLost says the caller no longer holds the lease it names: it expired, was
// released, or another holder took it (the fencing token moved on).
var ErrLeaseLost = errors.New("lease lost")

// Lease is a row of the leases table. Token grows by one each time the lease is acquired
// and never goes back, even across releases: it fences writes made by a former holder.
type Lease struct {
	Name      string
	Holder    string
	Token     int64
	ExpiresAt time.Time
}

// AcquireLease takes the lease called name for holder until now+ttl when it is free,
// expired, released, or already held by holder, and returns it with a new token. A lease
// another holder has and that has not expired gives ErrLeaseHeld.
func AcquireLease(ctx context.Context, tx *sql.Tx, name string, holder string, now time.Time, ttl time.Duration) (*Lease, error) {
	current, err := GetLease(ctx, tx, name)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, err
	}

	lease := &Lease{Name: name, Holder: holder, Token: 1, ExpiresAt: now.Add(ttl).UTC()}
	if current == nil {
		_, err = tx.ExecContext(ctx, "INSERT INTO leases (name, holder, token, expires_at) VALUES (?, ?, ?, ?)", name, holder, lease.Token, lease.ExpiresAt)
		if err != nil {
			return nil, fmt.Errorf("acquire lease %q: %w", name, err)
		}

		return lease, nil
	}

	if current.Holder != holder && current.Holder != "" && current.ExpiresAt.After(now) {
		return current, ErrLeaseHeld
	}

	lease.Token = current.Token + 1
	_, err = tx.ExecContext(ctx, "UPDATE leases SET holder = ?, token = ?, expires_at = ? WHERE name = ? AND token = ?", holder, lease.Token, lease.ExpiresAt, name, current.Token)
	if err != nil {
		return nil, fmt.Errorf("acquire lease %q: %w", name, err)
	}

	return lease, nil
}

// GetLease returns the lease called name, sql.ErrNoRows when it was never taken. A lease
// whose ExpiresAt has passed, or whose Holder is empty, is free.
func GetLease(ctx context.Context, tx *sql.Tx, name string) (*Lease, error) {
	lease := Lease{Name: name}
	err := tx.QueryRowContext(ctx, "SELECT holder, token, expires_at FROM leases WHERE name = ?", name).Scan(&lease.Holder, &lease.Token, &lease.ExpiresAt)
	if err != nil {
		return nil, err
	}

	return &lease, nil
}

// RenewLease moves the expiry of a lease the caller still holds (same holder and token,
// not expired) to now+ttl, and gives ErrLeaseLost otherwise.
func RenewLease(ctx context.Context, tx *sql.Tx, lease Lease, now time.Time, ttl time.Duration) (time.Time, error) {
	expires := now.Add(ttl).UTC()
	result, err := tx.ExecContext(ctx, "UPDATE leases SET expires_at = ? WHERE name = ? AND holder = ? AND token = ? AND expires_at > ?", expires, lease.Name, lease.Holder, lease.Token, now.UTC())
	if err != nil {
		return time.Time{}, fmt.Errorf("renew lease %q: %w", lease.Name, err)
	}

	n, err := result.RowsAffected()
	if err != nil {
		return time.Time{}, err
	}

	if n != 1 {
		return time.Time{}, ErrLeaseLost
	}

	return expires, nil
}

// ReleaseLease frees a lease the caller holds, so another member can take it at once. The
// row (and its token) stays, so the next holder's token is still larger. Releasing a lease
// already lost is not an error.
func ReleaseLease(ctx context.Context, tx *sql.Tx, lease Lease) error {
	_, err := tx.ExecContext(ctx, "UPDATE leases SET holder = '', expires_at = ? WHERE name = ? AND holder = ? AND token = ?", time.Unix(0, 0).UTC(), lease.Name, lease.Holder, lease.Token)
	if err != nil {
		return fmt.Errorf("release lease %q: %w", lease.Name, err)
	}

	return nil
}

// CheckLease gives ErrLeaseLost unless lease is still held (same holder and token, not
// expired at now). Called in the transaction that makes a write, it fences that write:
// a holder that lost its lease while paused cannot commit.
func CheckLease(ctx context.Context, tx *sql.Tx, lease Lease, now time.Time) error {
	var n int
	err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM leases WHERE name = ? AND holder = ? AND token = ? AND expires_at > ?", lease.Name, lease.Holder, lease.Token, now.UTC()).Scan(&n)
	if err != nil {
		return fmt.Errorf("check lease %q: %w", lease.Name, err)
	}

	if n != 1 {
		return ErrLeaseLost
	}

	return nil
}
