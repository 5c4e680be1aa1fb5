package cluster

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Register records this daemon in the members table under its name, and returns the
// name. The name comes from --cluster-name (or the join token), then from an earlier
// start, then from the host name, made unique when several members share a host.
// addresses are the member's HTTPS addresses (MemberAddresses); identity is nil when the
// daemon is not clustered.
//
// A member started while its cluster elects a leader (it led, and was restarted) finds the
// database unavailable for a few seconds: the registration is tried again for up to
// registerWait before the start fails. Recording the member twice is harmless (the row is
// saved whole).
func Register(ctx context.Context, store Store, identity *Identity, name string, addresses []string) (string, error) {
	start := time.Now()
	for {
		registered, err := register(ctx, store, identity, name, addresses)
		if err == nil || !db.Unavailable(err) || time.Since(start) > registerWait {
			return registered, err
		}

		select {
		case <-ctx.Done():
			return "", err
		case <-time.After(registerRetry):
		}
	}
}

// registerWait bounds how long a start waits for its cluster's database to answer;
// registerRetry is the pause between tries.
const (
	registerWait  = time.Minute
	registerRetry = 500 * time.Millisecond
)

// register is one try of Register.
func register(ctx context.Context, store Store, identity *Identity, name string, addresses []string) (string, error) {
	configured := name // checked by the daemon's flags
	err := store.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		name = configured
		if name == "" {
			existing, err := db.GetMemberByDatabaseAddress(ctx, tx, store.Address())
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}

			if existing != nil {
				name = existing.Name
			} else {
				name, err = defaultMemberName(ctx, tx, store.Address())
				if err != nil {
					return err
				}
			}
		}

		member := db.Member{Name: name, Address: strings.Join(addresses, ","), DatabaseAddress: store.Address(), StartedAt: time.Now(), HeartbeatAt: time.Now()}
		if identity != nil {
			// Recorded with the member: other members accept this certificate from it
			// until the row is deleted (auth.go).
			member.Certificate, member.CertificateFingerprint = string(identity.memberPEM), identity.memberFingerprint
			_, _, member.ClusterFingerprint = identity.PEM()
		}

		return db.SaveMember(ctx, tx, member)
	})
	if err != nil {
		return "", fmt.Errorf("register cluster member: %w", err)
	}

	return name, nil
}

// MemberAddresses are the HTTPS addresses other members (and joining daemons) use to reach
// this one, first the one to try. A wildcard --https-address is reached on the host of
// --cluster-address (databaseAddress), which the other members reach already for the
// database; a loopback address (of a wildcard's expansion) would make them talk to
// themselves. all lists every address the HTTPS API listens on.
func MemberAddresses(httpsAddress string, databaseAddress string, all func() []string) []string {
	host, port, err := net.SplitHostPort(httpsAddress)
	if err != nil || httpsAddress == "" {
		return all()
	}

	ip := net.ParseIP(strings.Trim(host, "[]"))
	if host != "" && (ip == nil || !ip.IsUnspecified()) {
		return []string{httpsAddress}
	}

	databaseHost, _, err := net.SplitHostPort(databaseAddress)
	if err != nil {
		return all() // a single node on a unix socket: nobody dials it
	}

	return []string{net.JoinHostPort(databaseHost, port)}
}

// defaultMemberName is the host name, with a suffix derived from the database address when
// another member (on the same host) has it already.
func defaultMemberName(ctx context.Context, tx *sql.Tx, databaseAddress string) (string, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "member"
	}

	host, _, _ = strings.Cut(host, ".")
	if validate.Name("cluster member", host) != nil {
		host = "member"
	}

	_, err = db.GetMember(ctx, tx, host)
	if err != nil {
		return host, nil
	}

	sum := sha256.Sum256([]byte(databaseAddress))
	return host + "-" + hex.EncodeToString(sum[:3]), nil
}

// Heartbeat records every HeartbeatInterval that this member is alive, until ctx ends,
// and takes it one step along a cluster certificate rotation at each beat. When another
// member removed this one it calls quit (if not nil) and returns.
func (m *Member) Heartbeat(ctx context.Context, quit func()) {
	ticker := time.NewTicker(HeartbeatInterval)
	defer ticker.Stop()
	beats := 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}

		beats++
		var member bool
		err := m.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			member, err = db.MemberHeartbeat(ctx, tx, m.db.Address(), time.Now())
			if err != nil || beats%60 != 0 {
				return err
			}

			// Commit markers only matter for the seconds after a leader's death.
			return db.PruneCommitMarkers(ctx, tx, time.Now().Add(-10*time.Minute))
		})
		if err != nil {
			if ctx.Err() == nil {
				m.logger.Debug("heartbeat not recorded", "err", err)
			}

			continue
		}

		if member {
			// A cluster certificate rotation moves one step per beat (rotate.go).
			err = m.SyncCertificate(ctx)
			if err != nil && ctx.Err() == nil {
				m.logger.Warn("cluster certificate rotation step failed", "err", err)
			}
		}

		if !member {
			// Another member removed this one: it has no database to work with any more.
			m.logger.Error("this member was removed from the cluster: stopping; wipe its data directory before joining it again")
			if quit != nil {
				quit()
			}

			return
		}
	}
}
