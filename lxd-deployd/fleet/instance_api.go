package fleet

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// What the governor API (.../shapes/{shape}/instances) asks of the fleet beyond launches
// and deletes: instances as the API shows them, from their records and LXD's view, and
// state changes. Package main parses the request and answers.

// InstanceView turns a record (and LXD's view of it, if known) into the API type: online
// says LXD answered, so that an instance it does not have is missing, not unknown.
func InstanceView(row db.Instance, latest int, live *lxdapi.Instance, online bool) api.DeploymentInstance {
	status := "Unknown"
	switch {
	case live != nil:
		status = live.Status
	case row.State == db.InstanceCreating:
		status = "Creating"
	case online:
		status = "Missing"
	}

	instance := api.DeploymentInstance{
		Name:         row.Name,
		Project:      row.Project,
		Deployment:   row.Deployment,
		Shape:        row.Shape,
		State:        row.State,
		Status:       status,
		CreatedAt:    row.CreatedAt,
		InstanceURL:  api.InstanceURL(row.Project, row.Name),
		TemplateHash: row.TemplateHash,
		Revision:     row.Revision,
		Outdated:     shapes.Outdated(row, latest),
	}

	if live != nil && live.Config != nil {
		instance.Limits = LimitsOf(live.Config)
	}

	// The health verdict and the lifecycle hook the instance waits in.
	instance.Health = row.Health.Status
	instance.Lifecycle = row.Hook.Hook
	instance.LifecycleDeadline = row.Hook.Deadline
	if row.Health.CheckedAt != nil || row.Health.Stale != "" {
		instance.HealthCheck = &api.DeploymentInstanceHealth{Status: row.Health.Status, Output: row.Health.Output, CheckedAt: row.Health.CheckedAt, Stale: row.Health.Stale != "", StaleReason: row.Health.Stale}
	}

	return instance
}

// WithLocation fills in the LXD member an instance runs on (LXD's word when it answered,
// else the record's) and reports it unreachable while LXD says that member is offline: LXD
// itself then shows such an instance in status Error, which would read as the instance's
// fault (doc/placement.md).
func WithLocation(instance *api.DeploymentInstance, row db.Instance, live *lxdapi.Instance, view backend.ClusterView) {
	instance.Location = row.Location
	if live != nil && live.Location != "" && live.Location != "none" {
		instance.Location = live.Location
	}

	if shapes.Unreachable(instance.Location, shapes.ClusterMembers(view)) {
		instance.Status = api.InstanceStatusUnreachable
	}
}

// ShapeInstances reads the records of a shape's instances and the shape's latest revision
// (which tells the outdated ones).
func ShapeInstances(ctx context.Context, cluster *db.Cluster, ref refs.ShapeRef) ([]db.Instance, int, error) {
	var rows []db.Instance
	var latest int
	err := cluster.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := refs.ShapeInTx(ctx, tx, ref)
		if err != nil {
			return err
		}

		latest = shape.Revision
		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: shape.ID})
		return err
	})

	return rows, latest, err
}

// Listing is LXD's listing of a shape's instances, started and not yet read: it answers
// those of want it holds.
type Listing func(want []string) (map[string]lxdapi.Instance, error)

// StartListing has LXD render the shape's instances while the records are read; the call
// is timed from start. A request that fails before it waits for the listing leaves it to
// end unread.
func (f *Fleet) StartListing(ref refs.ShapeRef, start time.Time) (Listing, error) {
	listed, err := f.lxd.StartShapeListing(ref.Project, ref.Name, ref.Shape)
	if err != nil {
		return nil, err
	}

	return func(want []string) (map[string]lxdapi.Instance, error) {
		live, err := listed(want)
		f.metrics.LXDCall("list", time.Since(start), err)
		return live, err
	}, nil
}

// LiveStatuses is LXD's status of a shape's instances: one listing of the instances LXD
// holds as the shape's, never one call per instance, decoding only the fields shown (the
// project's listing when that misses a created row: a renamed shape, an instance deleted
// behind the daemon's back). listing is the listing started, nil when LXD is unavailable
// for clientErr.
func LiveStatuses(listing Listing, clientErr error, rows []db.Instance) (map[string]lxdapi.Instance, error) {
	if listing == nil {
		return nil, clientErr
	}

	return WaitListing(listing, shapes.CreatedNames(rows), ListingWait)
}

// ListingWait is how long a listing waits for LXD's answer. A frozen or stalled LXD
// answers nothing, and the listing then shows the records without LXD's status, as when
// LXD is down, rather than hang its caller (issue 31: 30 s and a client timeout).
const ListingWait = 10 * time.Second

// WaitListing runs listing for want, giving up after limit; the listing itself then ends
// unread when LXD answers.
func WaitListing(listing Listing, want []string, limit time.Duration) (map[string]lxdapi.Instance, error) {
	type answer struct {
		live map[string]lxdapi.Instance
		err  error
	}

	answered := make(chan answer, 1)
	go func() {
		live, err := listing(want)
		answered <- answer{live, err}
	}()

	timer := time.NewTimer(limit)
	defer timer.Stop()
	select {
	case a := <-answered:
		return a.live, a.err
	case <-timer.C:
		return nil, lxdapi.StatusErrorf(http.StatusServiceUnavailable, "LXD did not answer the listing within %s", limit)
	}
}

// ShowInstance is one instance as the API shows it, with LXD's status and live state when
// LXD answers.
func (f *Fleet) ShowInstance(ctx context.Context, ref refs.InstanceRef) (api.DeploymentInstance, error) {
	var row *db.Instance
	var latest int
	err := f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, shape, err := refs.ShapeInTx(ctx, tx, ref.ShapeRef)
		if err != nil {
			return err
		}

		latest = shape.Revision
		row, err = db.GetInstance(ctx, tx, shape.ID, ref.Instance)
		return err
	})
	if err != nil {
		return api.DeploymentInstance{}, err
	}

	err = f.lxd.Available()
	if err != nil {
		return InstanceView(*row, latest, nil, false), nil
	}

	live, state, err := f.lxd.InstanceWithState(ref.Project, row.Name)
	if err != nil {
		result := InstanceView(*row, latest, nil, !lxdapi.StatusErrorCheck(err, http.StatusServiceUnavailable))
		WithLocation(&result, *row, nil, f.lxd.Cluster())
		return result, nil
	}

	result := InstanceView(*row, latest, live, true)
	WithLocation(&result, *row, live, f.lxd.Cluster())
	if state != nil {
		result.LiveState = state
	}

	return result, nil
}

// instanceActions are the state changes a governor may ask for.
var instanceActions = map[string]bool{"start": true, "stop": true, "restart": true, "freeze": true, "unfreeze": true}

// StartStateChange starts an operation that changes a created instance's state in LXD
// (start, stop, restart, freeze, unfreeze), refusing a bad action, an LXD that is offline
// and an instance that is not created.
func (f *Fleet) StartStateChange(ctx context.Context, ref refs.InstanceRef, req lxdapi.InstanceStatePut, by api.DeploymentRequestor) (*operations.Operation, error) {
	if !instanceActions[req.Action] {
		return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "action %q is not valid: use start, stop, restart, freeze or unfreeze", req.Action)
	}

	err := f.lxd.Available()
	if err != nil {
		return nil, err
	}

	var deploymentID int64
	err = f.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var shape *db.Shape
		deploymentID, shape, err = refs.ShapeInTx(ctx, tx, ref.ShapeRef)
		if err != nil {
			return err
		}

		row, err := db.GetInstance(ctx, tx, shape.ID, ref.Instance)
		if err != nil {
			return err
		}

		if row.State != db.InstanceCreated {
			return lxdapi.StatusErrorf(http.StatusConflict, "instance %s is %s: its state can change once it is created", row.Name, row.State)
		}

		return nil
	})
	if err != nil {
		return nil, err
	}

	return f.ops.Start(operations.Args{
		Description:  fmt.Sprintf("Changing state of instance %s (%s)", ref.Instance, req.Action),
		Project:      ref.Project,
		DeploymentID: deploymentID,
		Resources:    InstanceResources(ref),
		Run: func(ctx context.Context, op *operations.Operation) error {
			callStart := time.Now()
			err := f.lxd.SetInstanceState(ctx, ref.Project, ref.Instance, req)
			f.metrics.LXDCall("state", time.Since(callStart), err)
			if err == nil {
				f.reporter.Send(by, deploymentID, reporter.InstanceUpdated.Event(ref, nil))
				if req.Action == "stop" {
					instanceChanged(ctx, f.reporter, deploymentID, reporter.InstanceStopped, ref.Shape, ref.Instance)
				}
			}

			return err
		},
	}), nil
}
