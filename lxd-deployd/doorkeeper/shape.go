package doorkeeper

import (
	"context"
	"database/sql"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ShapeEndpoints computes one shape's endpoints now, from dqlite and one LXD listing of
// its project: what GET .../shapes/{shape}/endpoints serves on any member, whether or not
// it drives a door.
func ShapeEndpoints(ctx context.Context, cluster *db.Cluster, lxd *backend.LXD, ref refs.ShapeRef) ([]api.DeploymentShapeEndpoint, error) {
	var shape *db.Shape
	var rows []db.Instance
	var drains map[int64]time.Time
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		_, shape, err = refs.ShapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		if shape.Traffic == nil {
			return lxdapi.StatusErrorf(http.StatusBadRequest, "shape %s has no traffic: set its traffic object (port, listen or backend) for it to have endpoints", ref.Shape)
		}

		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
		if err != nil {
			return err
		}

		drains, err = db.GetInstanceDrains(ctx, tx)
		return err
	})
	if err != nil {
		return nil, err
	}

	live := map[string]backend.Serving{}
	if len(rows) > 0 {
		client, err := lxd.Requests()
		if err != nil {
			return nil, err
		}

		listCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
		live, err = backend.ListInstanceServing(listCtx, client, ref.Project)
		cancel()
		if err != nil {
			return nil, err
		}
	}

	return Endpoints(*shape, rows, live, drains, time.Now()), nil
}
