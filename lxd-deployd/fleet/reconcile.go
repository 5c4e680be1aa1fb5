package fleet

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

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/lease"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Reconciler brings the instance rows and LXD back into agreement after whatever happened
// behind lxd-deployd's back: a crash mid-launch, an instance deleted in LXD directly, an
// instance tagged as ours that we have no record of.
type Reconciler struct {
	db       *db.Cluster
	lxd      *backend.LXD
	inflight *Inflight
	sockets  Sockets
	reporter Reporter
	metrics  *metrics.Metrics
	logger   *slog.Logger

	// healer replaces missing instances of shapes with health.replace (nil: none).
	healer *Autohealer

	// drainOver says whether a cut-short delete's traffic drain is over (Fleet.drainOver).
	drainOver func(ctx context.Context, row db.Instance) bool

	// offlineAfter is how long without a heartbeat before a member counts as offline.
	offlineAfter time.Duration

	// owner names this daemon on instance records; others' records in flux are left alone
	// for a grace period, since their launches may still be running.
	owner string

	// fence, when set, is called in the transaction recording a pass's findings: it fails
	// once this member no longer holds the reconcile lease (lease.Check).
	fence func(ctx context.Context, tx *sql.Tx) error
}

func newReconciler(f *Fleet, offlineAfter time.Duration) *Reconciler {
	return &Reconciler{db: f.db, lxd: f.lxd, inflight: f.inflight, sockets: f.sockets, reporter: f.reporter, metrics: f.metrics, logger: f.logger, healer: f.Healer,
		offlineAfter: offlineAfter, owner: f.owner, drainOver: f.drainOver}
}

// Fenced returns a copy of the reconciler whose writes commit only while held is.
func (rc *Reconciler) Fenced(held lease.Lease) *Reconciler {
	copied := *rc
	copied.fence = func(ctx context.Context, tx *sql.Tx) error { return lease.Check(ctx, tx, held) }
	return &copied
}

// Run reconciles as soon as LXD is reachable, then every interval.
func (rc *Reconciler) Run(ctx context.Context, interval time.Duration) {
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
// (PlanReconcile), act.
func (rc *Reconciler) reconcile(ctx context.Context) error {
	client, err := rc.lxd.Conn()
	if err != nil {
		return err
	}

	view, err := rc.observe(ctx, client)
	if err != nil {
		return err
	}

	plan := PlanReconcile(view, rc.owner, time.Now())
	for _, step := range plan.Repairs {
		rc.Repair(ctx, client, step)
	}

	return rc.recordOrphans(ctx, plan)
}

// observe reads the records and what LXD holds, for one pass.
func (rc *Reconciler) observe(ctx context.Context, client *backend.Conn) (ReconcileView, error) {
	v := ReconcileView{Deployments: map[string]int64{}, Inflight: rc.inflight.Has, OfflineAfter: rc.offlineAfter}
	var projects []string
	err := rc.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		v.Rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{})
		if err != nil {
			return err
		}

		all, err := db.GetDeploymentRows(ctx, tx)
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

	v.Live, err = TakeSnapshot(client, projects, rc.metrics)
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
func (rc *Reconciler) recordOrphans(ctx context.Context, plan ReconcilePlan) error {
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
			rc.reporter.Send(api.InternalRequestor("reconcile"), id, reporter.InstanceOrphaned.LXDEvent(instance.Project, instance.Name))
			instanceChanged(ctx, rc.reporter, id, reporter.InstanceOrphaned, instance.Config[backend.ConfigShape], instance.Name)
		}
	}

	return nil
}

// Repair applies one planned repair to a record no operation is working on. Every write
// is a compare-and-set on the state the plan saw, so a concurrent change wins.
func (rc *Reconciler) Repair(ctx context.Context, client *backend.Conn, step RepairStep) {
	row := step.Row
	switch step.Action {
	case RepairAdopt:
		rc.adopt(ctx, client, row, step.Status)
	case RepairDropLaunch:
		// Undo what the reservation recorded, as a launch LXD refused does (launchDropped).
		rc.logger.Info("reconcile: removing row of an instance whose creation never finished", "instance", row.Name)
		rc.removeRecord(ctx, row, StaleLaunchDropped(row))
	case RepairFinishDelete:
		// The bound check passed before the crash: finish the delete, once the instance's
		// traffic drain is over (a later pass looks again).
		if !rc.drainOver(ctx, row) {
			return
		}

		rc.deleteThenRemove(ctx, client, row, "finish interrupted delete")
	case RepairRemoveRecord:
		rc.removeRecord(ctx, row)
	case RepairMissing:
		// The pass's listing may be older than the instance's state (or come from an LXD
		// that was starting): LXD is asked for the instance itself before it is called
		// missing, and so replaced.
		live, _, err := backend.ReadInstance(client, row.Project, row.Name)
		gone := lxdapi.StatusErrorCheck(err, http.StatusNotFound) || (err == nil && live.Config[backend.ConfigDeployment] == "")
		if !gone {
			rc.logger.Info("reconcile: instance not in LXD's listing, but LXD did not say it is gone; asking again next pass", "instance", row.Name, "project", row.Project, "err", err)
			return
		}

		rc.logger.Warn("reconcile: instance missing from LXD", "instance", row.Name, "project", row.Project)
		rc.setState(ctx, row, db.InstanceMissing, ReconcileActivity(row, -1, "instance "+row.Name+" is missing from LXD"))
		rc.reporter.Send(api.InternalRequestor("reconcile"), row.DeploymentID, reporter.InstanceMissing.Event(refs.Instance(row), nil))
		instanceChanged(ctx, rc.reporter, row.DeploymentID, reporter.InstanceMissing, row.Shape, row.Name)
		rc.askReplacement(ctx, row)
	case RepairBack:
		rc.setState(ctx, row, db.InstanceCreated, ReconcileActivity(row, +1, "instance "+row.Name+" is back in LXD"))
	}
}

// adopt finishes a launch a crash cut short after LXD made the instance, rather than leave
// an orphan: the launch promised a started instance. One that does not start is no
// capacity: it goes, as a launch LXD refused does.
func (rc *Reconciler) adopt(ctx context.Context, client *backend.Conn, row db.Instance, status lxdapi.StatusCode) {
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
		rc.metrics.LXDCall("state", time.Since(callStart), err)
		if err != nil {
			rc.logger.Warn("reconcile: adopted instance does not start: deleting it", "instance", row.Name, "err", err)
			// Going first: it keeps counting against the maximum until LXD has deleted it.
			going := row
			going.State = db.InstanceDeleting
			if rc.claim(ctx, row, going.State) {
				rc.deleteThenRemove(ctx, client, going, "delete instance of an unfinished launch", StaleLaunchDropped(row))
			}

			return
		}
	}

	rc.setState(ctx, row, db.InstanceCreated)
}

// deleteThenRemove deletes an instance in LXD, then its record (with also in the same
// transaction); an instance LXD will not delete yet stays for the next pass.
func (rc *Reconciler) deleteThenRemove(ctx context.Context, client *backend.Conn, row db.Instance, what string, also ...func(ctx context.Context, tx *sql.Tx) error) {
	callStart := time.Now()
	err := backend.DeleteInstance(ctx, client, row.Project, row.Name)
	rc.metrics.LXDCall("delete", time.Since(callStart), err)
	if err != nil {
		rc.logger.Warn("reconcile: "+what, "instance", row.Name, "err", err)
		return
	}

	rc.removeRecord(ctx, row, also...)
}

// claim moves a record from the state the plan saw to state (the same state to only make
// sure it is still there) and says whether it did: false when anything changed it since.
func (rc *Reconciler) claim(ctx context.Context, row db.Instance, state string) bool {
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
func (rc *Reconciler) setState(ctx context.Context, row db.Instance, state string, also ...func(ctx context.Context, tx *sql.Tx) error) {
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
func (rc *Reconciler) removeRecord(ctx context.Context, row db.Instance, also ...func(ctx context.Context, tx *sql.Tx) error) {
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
func busyInstances(client *backend.Conn, projects []string) (map[string]bool, error) {
	var ops []lxdapi.Operation
	for _, project := range projects {
		projectOps, err := backend.ListOperations(client, project)
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
func (rc *Reconciler) askReplacement(ctx context.Context, row db.Instance) {
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
		rc.healer.Poke()
		return
	}

	target := shapes.Clamp(shape.ScalingCurrent+1, shape.ScalingMinimum, shape.ScalingMaximum)
	rc.reporter.Notify(ctx, row.DeploymentID, api.WebhookScaleRequest, api.WebhookScaleRequestMetadata{
		Shape:       row.Shape,
		Target:      target,
		Reason:      fmt.Sprintf("instance %s is missing from LXD: replace it", row.Name),
		RequestedBy: "lxd-deployd",
	})
}
