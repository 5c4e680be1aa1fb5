package fleet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"strings"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// deleteInstances deletes every given instance in LXD, a few at a time, then their rows,
// each with its activity entry (by, why). Forced shape and deployment deletes use it before
// removing the records.
func deleteInstances(ctx context.Context, cluster *db.Cluster, client *backend.Conn, sockets Sockets, rows []db.Instance, by api.DeploymentRequestor, why string) error {
	if len(rows) == 0 {
		return nil
	}

	errs := make(chan error, len(rows))
	limit := make(chan struct{}, 4)
	for _, row := range rows {
		limit <- struct{}{}
		go func(row db.Instance) {
			defer func() { <-limit }()
			err := backend.DeleteInstance(ctx, client, row.Project, row.Name)
			if err == nil {
				sockets.RemoveInstance(row.Project, row.Name)
				err = DropForcedInstance(ctx, cluster, row, by, why)
				if errors.Is(err, db.ErrInstanceChanged) {
					err = nil
				}
			}

			if err != nil {
				err = fmt.Errorf("delete instance %s: %w", row.Name, err)
			}

			errs <- err
		}(row)
	}

	var first error
	for range rows {
		err := <-errs
		if err != nil && first == nil {
			first = err
		}
	}

	return first
}

// DropForcedInstance removes the record of an instance a forced delete removed from LXD,
// with its activity entry, in one transaction: the shape still exists then, and a forced
// delete that stops half way leaves a log that explains the instances it took.
func DropForcedInstance(ctx context.Context, cluster *db.Cluster, row db.Instance, by api.DeploymentRequestor, why string) error {
	return cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := db.DeleteInstance(ctx, tx, row.ID, row.State)
		if err != nil {
			return err
		}

		return forcedDeleteActivity(ctx, tx, row, by, why)
	})
}

// DeleteWithInstances deletes a shape or deployment record for by. While it has instances
// that is a 409, unless force: then the instances go first, in LXD and as rows, and the
// record last. An instance launched in between makes the final step a 409 rather than leave
// an LXD instance behind without a record. It is the fleet's, as launches and deletes are:
// the instances go through the fleet's LXD, records and governor sockets.
func (f *Fleet) DeleteWithInstances(ctx context.Context, by api.DeploymentRequestor, what string, force bool, instances func(ctx context.Context, tx *sql.Tx) ([]db.Instance, error), deleteRecord func(ctx context.Context, tx *sql.Tx) error) error {
	var rows []db.Instance
	err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		rows, err = instances(ctx, tx)
		if err != nil {
			return err
		}

		if len(rows) == 0 {
			return deleteRecord(ctx, tx)
		}

		if !force {
			return lxdapi.StatusErrorf(http.StatusConflict, "%s still has %d instances: delete them first, or use force to delete them with it", what, len(rows))
		}

		for _, row := range rows {
			if row.State == db.InstanceCreating || row.State == db.InstanceDeleting {
				return lxdapi.StatusErrorf(http.StatusConflict, "instance %s of %s is being %s: wait for its operation, then delete again", row.Name, what, strings.TrimSuffix(row.State, "ing")+"ed")
			}
		}

		return nil
	})
	if err != nil || len(rows) == 0 {
		return err
	}

	client, err := f.lxd.Conn()
	if err != nil {
		return err
	}

	// A client that goes away must not stop this half way: the records would stay while
	// their instances are gone or unprotected.
	ctx = context.WithoutCancel(ctx)
	err = deleteInstances(ctx, f.db, client, f.sockets, rows, by, what+" deleted with force")
	if err != nil {
		return err
	}

	return f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := instances(ctx, tx)
		if err != nil {
			return err
		}

		if len(rows) > 0 {
			return lxdapi.StatusErrorf(http.StatusConflict, "%s got new instances while it was being deleted: try again", what)
		}

		return deleteRecord(ctx, tx)
	})
}
