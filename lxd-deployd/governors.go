package main

import (
	"context"
	"database/sql"
	"log/slog"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
)

// governorSockets is what instance handlers need of the governor transports.
type governorSockets = fleet.Sockets

// restoreGovernorSockets re-creates, at start, the sockets of the instances that were made
// with one (their proxy device is in LXD whatever the shape says now).
func restoreGovernorSockets(ctx context.Context, cluster *db.Cluster, sockets governorSockets) error {
	var rows []db.Instance
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{})
		return err
	})
	if err != nil {
		return err
	}

	// One socket that cannot come back must not keep the daemon down.
	for _, row := range rows {
		if !row.GovernorSocket {
			continue
		}

		_, err = sockets.AddInstance(row.Project, row.Name)
		if err != nil {
			slog.Warn("governor socket not restored", "instance", row.Name, "project", row.Project, "err", err)
		}
	}

	return nil
}
