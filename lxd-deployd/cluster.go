package main

import (
	"context"
	"database/sql"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/cluster"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
)

// The daemon's wiring of package cluster: its identity, registration and heartbeat,
// the leased background work, the cluster API and the record of operations.

// The leases under which background work runs: exactly one member of a cluster does each.
const (
	leaseReconcile = "reconcile"
	leaseMetrics   = "metrics"
	leaseWebhooks  = "webhooks"
	leaseInstances = "instances" // health checks, autohealing, hook deadlines, warm pools
)

// prepareCluster checks the cluster flags and, on a first start with a join token, joins
// (cluster.Prepare).
func prepareCluster(ctx context.Context, cfg *config) error {
	joined, err := cluster.Prepare(ctx, cluster.JoinRequest{DataDir: cfg.dataDir, Token: cfg.clusterJoinToken, ClusterAddress: cfg.clusterAddress, Name: cfg.clusterName}, cfg.joinTokenExpiry)
	if err != nil || joined == nil {
		return err
	}

	cfg.clusterJoin = joined.DatabaseAddresses
	cfg.clusterName = joined.Name
	return nil
}

// registerMember records this daemon in the members table and returns its name
// (cluster.Register).
func (o *opened) registerMember(ctx context.Context) (string, error) {
	addresses := cluster.MemberAddresses(o.config.httpsAddress, o.db.Address(), o.addresses)
	return cluster.Register(ctx, o.db, o.identity, o.config.clusterName, addresses)
}

// clusterMember is this daemon as a member of its cluster, once registered.
func (d *daemon) clusterMember() *cluster.Member {
	return cluster.New(cluster.Config{DB: d.db, Nodes: d.db, Identity: d.identity, Name: d.member, TokenExpiry: d.config.joinTokenExpiry, Logger: d.logger})
}

// addLeasedWork declares the cluster-wide background tasks, each under its lease: whichever
// member holds it does the work, another takes it over within lease.DefaultTTL when the
// holder dies, and at once when it stops cleanly (the lease is released).
func (d *daemon) addLeasedWork(metrics *webhooks.Collector) {
	member := d.clusterMember()
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
			// (cluster.SettleLostOperations), so one member judges both their records.
			ctx, cancel := context.WithCancel(ctx)
			settled := make(chan struct{})
			go func() { defer close(settled); member.SettleLostOperations(ctx, held) }()
			d.fleet.Reconciler.Fenced(held).Run(ctx, d.config.reconcileInterval)
			cancel()
			<-settled
		})
	})
}

// clusterAPI builds the cluster API's handler set.
func (d *daemon) clusterAPI() clusterAPI {
	return clusterAPI{member: d.clusterMember(), events: d.events}
}

// shareOperations settles the operations this member left running before a restart; its
// manager records every new one in dqlite (newDaemon).
func (d *daemon) shareOperations(ctx context.Context) error {
	return d.clusterOps().Settle(ctx)
}

// clusterOps answers for other members' operations.
func (d *daemon) clusterOps() *cluster.Operations {
	return cluster.NewOperations(d.db, d.member, d.identity)
}
