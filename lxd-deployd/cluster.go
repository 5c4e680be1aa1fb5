package main

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
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

const (
	// heartbeatInterval is how often a member records that it is alive.
	heartbeatInterval = time.Second

	// offlineAfter is how long without a heartbeat before a member is listed offline.
	offlineAfter = 5 * heartbeatInterval
)

// The leases under which background work runs: exactly one member of a cluster does each.
const (
	leaseReconcile = "reconcile"
	leaseMetrics   = "metrics"
	leaseWebhooks  = "webhooks"
	leaseInstances = "instances" // health checks, autohealing, hook deadlines, warm pools
)

// registerMember records this daemon in the members table under its name, and returns the
// name. The name comes from --cluster-name (or the join token), then from an earlier
// start, then from the host name, made unique when several members share a host.
func (o *opened) registerMember(ctx context.Context) (string, error) {
	var name string
	err := o.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		name = o.config.clusterName // checked by prepareCluster
		if name == "" {
			existing, err := db.GetMemberByDatabaseAddress(ctx, tx, o.db.Address())
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}

			if existing != nil {
				name = existing.Name
			} else {
				name, err = defaultMemberName(ctx, tx, o.db.Address())
				if err != nil {
					return err
				}
			}
		}

		member := db.Member{Name: name, Address: strings.Join(o.memberAddresses(), ","), DatabaseAddress: o.db.Address(), StartedAt: time.Now(), HeartbeatAt: time.Now()}
		if o.identity != nil {
			// Recorded with the member: other members accept this certificate from it
			// until the row is deleted (cluster_auth.go).
			member.Certificate, member.CertificateFingerprint = string(o.identity.memberPEM), o.identity.memberFingerprint
			_, _, member.ClusterFingerprint = o.identity.clusterPEM()
		}

		return db.SaveMember(ctx, tx, member)
	})
	if err != nil {
		return "", fmt.Errorf("register cluster member: %w", err)
	}

	return name, nil
}

// memberAddresses are the HTTPS addresses other members (and joining daemons) use to reach
// this one, first the one to try. A wildcard --https-address is reached on the host of
// --cluster-address, which the other members reach already for the database; a loopback
// address (of a wildcard's expansion) would make them talk to themselves.
func (o *opened) memberAddresses() []string {
	host, port, err := net.SplitHostPort(o.config.httpsAddress)
	if err != nil || o.config.httpsAddress == "" {
		return o.addresses()
	}

	ip := net.ParseIP(strings.Trim(host, "[]"))
	if host != "" && (ip == nil || !ip.IsUnspecified()) {
		return []string{o.config.httpsAddress}
	}

	databaseHost, _, err := net.SplitHostPort(o.db.Address())
	if err != nil {
		return o.addresses() // a single node on a unix socket: nobody dials it
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

// heartbeat records every heartbeatInterval that this member is alive, until ctx ends.
func (d *daemon) heartbeat(ctx context.Context) {
	ticker := time.NewTicker(heartbeatInterval)
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
		err := d.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			member, err = db.MemberHeartbeat(ctx, tx, d.db.Address(), time.Now())
			if err != nil || beats%60 != 0 {
				return err
			}

			// Commit markers only matter for the seconds after a leader's death.
			return db.PruneCommitMarkers(ctx, tx, time.Now().Add(-10*time.Minute))
		})
		if err != nil {
			if ctx.Err() == nil {
				d.logger.Debug("heartbeat not recorded", "err", err)
			}

			continue
		}

		if member {
			// A cluster certificate rotation moves one step per beat (cluster_rotate.go).
			err = d.syncClusterCertificate(ctx)
			if err != nil && ctx.Err() == nil {
				d.logger.Warn("cluster certificate rotation step failed", "err", err)
			}
		}

		if !member {
			// Another member removed this one: it has no database to work with any more.
			d.logger.Error("this member was removed from the cluster: stopping; wipe its data directory before joining it again")
			if d.quit != nil {
				d.quit()
			}

			return
		}
	}
}

// addLeasedWork declares the cluster-wide background tasks, each under its lease: whichever
// member holds it does the work, another takes it over within lease.DefaultTTL when the
// holder dies, and at once when it stops cleanly (the lease is released).
func (d *daemon) addLeasedWork(metrics *webhooks.Collector) {
	d.tasks.Add("webhooks", func(ctx context.Context) {
		d.leases.Run(ctx, leaseWebhooks, func(ctx context.Context, _ lease.Lease) { d.webhooks.Run(ctx) })
	})

	d.tasks.Add("governor metrics", func(ctx context.Context) {
		d.leases.Run(ctx, leaseMetrics, func(ctx context.Context, held lease.Lease) {
			metrics.RunFenced(ctx, time.Second, func(ctx context.Context, tx *sql.Tx) error { return lease.Check(ctx, tx, held) })
		})
	})

	d.tasks.Add("reconcile", func(ctx context.Context) {
		d.leases.Run(ctx, leaseReconcile, func(ctx context.Context, held lease.Lease) {
			// The reconcile holder also settles lost members' operations
			// (cluster_lost_operations.go), so one member judges both their records.
			ctx, cancel := context.WithCancel(ctx)
			settled := make(chan struct{})
			go func() { defer close(settled); d.settleLostOperations(ctx, held) }()
			d.fleet.Reconciler.Fenced(held).Run(ctx, d.config.reconcileInterval)
			cancel()
			<-settled
		})
	})
}

// clusterAPI builds the cluster API's handler set.
func (d *daemon) clusterAPI() clusterAPI {
	return clusterAPI{db: d.db, member: d.member, identity: d.identity, tokenExpiry: d.config.joinTokenExpiry, events: d.events, syncCertificate: d.syncClusterCertificate}
}

// shareOperations settles the operations this member left running before a restart; its
// manager records every new one in dqlite (newDaemon).
func (d *daemon) shareOperations(ctx context.Context) error {
	return d.clusterOps().settle(ctx)
}

// clusterOps answers for other members' operations.
func (d *daemon) clusterOps() *clusterOperations {
	return &clusterOperations{db: d.db, member: d.member, identity: d.identity}
}
