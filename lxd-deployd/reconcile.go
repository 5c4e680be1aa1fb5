package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// reconciler brings the instance rows and LXD back into agreement after whatever happened
// behind lxd-deployd's back: a crash mid-launch, an instance deleted in LXD directly, an
// instance tagged as ours that we have no record of.
type reconciler struct {
	db        *db.Cluster
	lxd       *backend.LXD
	inflight  *fleet.Inflight
	sockets   governorSockets
	lifecycle lifecycle
	logger    *slog.Logger

	// healer replaces missing instances of shapes with health.replace (nil: none).
	healer *autohealer

	// owner names this daemon on instance records; others' records in flux are left alone
	// for a grace period, since their launches may still be running.
	owner string

	// fence, when set, is called in the transaction recording a pass's findings: it fails
	// once this member no longer holds the reconcile lease (lease.Check).
	fence func(ctx context.Context, tx *sql.Tx) error
}

func newReconciler(cluster *db.Cluster, lxd *backend.LXD, flight *fleet.Inflight, sockets governorSockets, l lifecycle, logger *slog.Logger, owner string) *reconciler {
	return &reconciler{db: cluster, lxd: lxd, inflight: flight, sockets: sockets, lifecycle: l, logger: logger, owner: owner}
}

// fenced returns a copy of the reconciler whose writes commit only while held is.
func (rc *reconciler) fenced(held lease.Lease) *reconciler {
	copied := *rc
	copied.fence = func(ctx context.Context, tx *sql.Tx) error { return lease.Check(ctx, tx, held) }
	return &copied
}

// run reconciles as soon as LXD is reachable, then every interval.
func (rc *reconciler) run(ctx context.Context, interval time.Duration) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()

	// The first pass waits for LXD, polling quickly, so that a restarted daemon repairs
	// crash leftovers at once.
	for !rc.lxd.Status().Online {
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}

	for {
		err := rc.reconcile(ctx)
		if err != nil && ctx.Err() == nil {
			rc.logger.Warn("reconcile failed", "err", err)
		}

		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// reconcile makes one pass: observe (the records and one LXD listing per project), plan
// (fleet.PlanReconcile), act.
func (rc *reconciler) reconcile(ctx context.Context) error {
	client, err := rc.lxd.Client()
	if err != nil {
		return err
	}

	view, err := rc.observe(ctx, client)
	if err != nil {
		return err
	}

	plan := fleet.PlanReconcile(view, rc.owner, time.Now())
	for _, step := range plan.Repairs {
		rc.repair(ctx, client, step)
	}

	return rc.recordOrphans(ctx, plan)
}

// observe reads the records and what LXD holds, for one pass.
func (rc *reconciler) observe(ctx context.Context, client lxd.InstanceServer) (fleet.ReconcileView, error) {
	v := fleet.ReconcileView{Deployments: map[string]int64{}, Inflight: rc.inflight.Has, OfflineAfter: offlineAfter}
	var projects []string
	err := rc.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		v.Rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{})
		if err != nil {
			return err
		}

		all, err := db.GetDeployments(ctx, tx, db.DeploymentFilter{})
		if err != nil {
			return err
		}

		for _, d := range all {
			v.Deployments[d.Project+"/"+d.Name] = d.ID
		}

		v.Members, err = db.GetMembers(ctx, tx)
		if err != nil {
			return err
		}

		projects, err = db.GetProjects(ctx, tx)
		return err
	})
	if err != nil {
		return v, err
	}

	v.Live, err = fleet.TakeSnapshot(client, projects, rc.lifecycle.metrics)
	if err != nil {
		return v, err
	}

	// An instance LXD is still working on (an operation our crashed predecessor started)
	// is left alone until LXD is done with it.
	v.Busy, err = busyInstances(client, projects)
	return v, err
}

// recordOrphans stores the orphans a pass found and announces the new ones. The list lives
// in dqlite so that every member answers with it; the write is fenced by the reconcile
// lease, so a member that lost it cannot overwrite the new holder's.
func (rc *reconciler) recordOrphans(ctx context.Context, plan fleet.ReconcilePlan) error {
	var added map[int64][]string
	err := rc.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if rc.fence != nil {
			err := rc.fence(ctx, tx)
			if err != nil {
				return err
			}
		}

		var err error
		added, err = db.ReplaceOrphans(ctx, tx, plan.Orphans, time.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("record orphaned instances: %w", err)
	}

	for id, urls := range added {
		for _, url := range urls {
			instance := plan.Tagged[url]
			rc.logger.Warn("orphaned instance: tagged for a deployment but not recorded; not deleting it", "instance", instance.Name, "project", instance.Project, "deployment", instance.Config[backend.ConfigDeployment])
			rc.lifecycle.emit(fleet.InternalRequestor("reconcile"), instance.Project, id, lifecycleInstanceOrphaned, url)
			rc.lifecycle.instanceChanged(ctx, id, lifecycleInstanceOrphaned, instance.Config[backend.ConfigShape], instance.Name)
		}
	}

	return nil
}

// repair applies one planned repair to a record no operation is working on. Every write
// is a compare-and-set on the state the plan saw, so a concurrent change wins.
func (rc *reconciler) repair(ctx context.Context, client lxd.InstanceServer, step fleet.RepairStep) {
	row := step.Row
	switch step.Action {
	case fleet.RepairAdopt:
		rc.adopt(ctx, client, row, step.Status)
	case fleet.RepairDropLaunch:
		// Undo what the reservation recorded, as a launch LXD refused does (launchDropped).
		rc.logger.Info("reconcile: removing row of an instance whose creation never finished", "instance", row.Name)
		rc.removeRecord(ctx, row, fleet.StaleLaunchDropped(row))
	case fleet.RepairFinishDelete:
		// The bound check passed before the crash: finish the delete.
		rc.deleteThenRemove(ctx, client, row, "finish interrupted delete")
	case fleet.RepairRemoveRecord:
		rc.removeRecord(ctx, row)
	case fleet.RepairMissing:
		rc.logger.Warn("reconcile: instance missing from LXD", "instance", row.Name, "project", row.Project)
		rc.setState(ctx, row, db.InstanceMissing, fleet.ReconcileActivity(row, -1, "instance "+row.Name+" is missing from LXD"))
		source := api.DeploymentShapeInstanceURL(row.Project, row.Deployment, row.Shape, row.Name)
		rc.lifecycle.emit(fleet.InternalRequestor("reconcile"), row.Project, row.DeploymentID, lifecycleInstanceMissing, source)
		rc.lifecycle.instanceChanged(ctx, row.DeploymentID, lifecycleInstanceMissing, row.Shape, row.Name)
		rc.askReplacement(ctx, row)
	case fleet.RepairBack:
		rc.setState(ctx, row, db.InstanceCreated, fleet.ReconcileActivity(row, +1, "instance "+row.Name+" is back in LXD"))
	}
}

// adopt finishes a launch a crash cut short after LXD made the instance, rather than leave
// an orphan: the launch promised a started instance. One that does not start is no
// capacity: it goes, as a launch LXD refused does.
func (rc *reconciler) adopt(ctx context.Context, client lxd.InstanceServer, row db.Instance, status lxdapi.StatusCode) {
	// The plan read the record before it listed LXD: a launch that finished in between has
	// moved the record on (and is out of the in-flight set), and LXD's listing may show its
	// instance stopped between create and start. Act only on a record still as it was seen,
	// or a running instance whose record says created could be deleted as "not starting".
	if !rc.claim(ctx, row, row.State) {
		return
	}

	rc.logger.Info("reconcile: adopting instance left creating by a crash", "instance", row.Name)
	if status == lxdapi.Stopped {
		callStart := time.Now()
		err := backend.UpdateInstanceState(ctx, client, row.Project, row.Name, lxdapi.InstanceStatePut{Action: "start", Timeout: -1})
		rc.lifecycle.metrics.LXDCall("state", time.Since(callStart), err)
		if err != nil {
			rc.logger.Warn("reconcile: adopted instance does not start: deleting it", "instance", row.Name, "err", err)
			// Going first: it keeps counting against the maximum until LXD has deleted it.
			going := row
			going.State = db.InstanceDeleting
			if rc.claim(ctx, row, going.State) {
				rc.deleteThenRemove(ctx, client, going, "delete instance of an unfinished launch", fleet.StaleLaunchDropped(row))
			}

			return
		}
	}

	rc.setState(ctx, row, db.InstanceCreated)
}

// deleteThenRemove deletes an instance in LXD, then its record (with also in the same
// transaction); an instance LXD will not delete yet stays for the next pass.
func (rc *reconciler) deleteThenRemove(ctx context.Context, client lxd.InstanceServer, row db.Instance, what string, also ...func(ctx context.Context, tx *sql.Tx) error) {
	callStart := time.Now()
	err := backend.DeleteInstance(ctx, client, row.Project, row.Name)
	rc.lifecycle.metrics.LXDCall("delete", time.Since(callStart), err)
	if err != nil {
		rc.logger.Warn("reconcile: "+what, "instance", row.Name, "err", err)
		return
	}

	rc.removeRecord(ctx, row, also...)
}

// claim moves a record from the state the plan saw to state (the same state to only make
// sure it is still there) and says whether it did: false when anything changed it since.
func (rc *reconciler) claim(ctx context.Context, row db.Instance, state string) bool {
	err := rc.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.SetInstanceState(ctx, tx, row.ID, row.State, state, rc.owner, time.Now())
	})
	if err != nil && !errors.Is(err, db.ErrInstanceChanged) {
		rc.logger.Warn("reconcile: claim instance record", "instance", row.Name, "err", err)
	}

	return err == nil
}

// setState moves a record on from the state the plan saw, with also in the same
// transaction.
func (rc *reconciler) setState(ctx context.Context, row db.Instance, state string, also ...func(ctx context.Context, tx *sql.Tx) error) {
	err := rc.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := db.SetInstanceState(ctx, tx, row.ID, row.State, state, rc.owner, time.Now())
		for _, f := range also {
			if err == nil {
				err = f(ctx, tx)
			}
		}

		return err
	})
	if err != nil && !errors.Is(err, db.ErrInstanceChanged) {
		rc.logger.Warn("reconcile: record instance state", "instance", row.Name, "err", err)
	}
}

// removeRecord removes a record still in the state the plan saw, with also in the same
// transaction.
func (rc *reconciler) removeRecord(ctx context.Context, row db.Instance, also ...func(ctx context.Context, tx *sql.Tx) error) {
	rc.sockets.RemoveInstance(row.Project, row.Name)
	err := rc.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := db.DeleteInstance(ctx, tx, row.ID, row.State)
		for _, f := range also {
			if err == nil {
				err = f(ctx, tx)
			}
		}

		return err
	})
	if err != nil && !errors.Is(err, db.ErrInstanceChanged) {
		rc.logger.Warn("reconcile: remove instance row", "instance", row.Name, "err", err)
	}
}

// busyInstances returns the project/name of every instance a running LXD operation touches,
// from one listing of LXD's operations per project (LXD 5.0 cannot list all projects at once).
func busyInstances(client lxd.InstanceServer, projects []string) (map[string]bool, error) {
	var ops []lxdapi.Operation
	for _, project := range projects {
		projectOps, err := client.UseProject(project).GetOperations()
		if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
			continue // the LXD project does not exist (yet)
		}

		if err != nil {
			return nil, err
		}

		ops = append(ops, projectOps...)
	}

	busy := map[string]bool{}
	for _, op := range ops {
		if op.StatusCode.IsFinal() {
			continue
		}

		for _, resource := range op.Resources["instances"] {
			u, err := url.Parse(resource)
			if err != nil {
				continue
			}

			project := u.Query().Get("project")
			if project == "" {
				project = api.DefaultProject
			}

			busy[project+"/"+path.Base(u.Path)] = true
		}
	}

	return busy, nil
}

// askReplacement asks the governor to bring a shape that lost an instance back to the size
// it had: the platform reports, the governor decides.
func (rc *reconciler) askReplacement(ctx context.Context, row db.Instance) {
	var shape *db.Shape
	err := rc.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		shape, err = db.GetShape(ctx, tx, row.DeploymentID, row.Shape)
		return err
	})
	if err != nil {
		return
	}

	// Autohealing replaces it: asking the governor too would make two.
	if shape.Health != nil && shape.Health.Replace {
		rc.healer.poke()
		return
	}

	target := shapes.Clamp(shape.ScalingCurrent+1, shape.ScalingMinimum, shape.ScalingMaximum)
	rc.lifecycle.notify(ctx, row.DeploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
		Shape:       row.Shape,
		Target:      target,
		Reason:      fmt.Sprintf("instance %s is missing from LXD: replace it", row.Name),
		RequestedBy: "lxd-deployd",
	})
}
