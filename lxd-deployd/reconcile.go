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
	inflight  *inflight
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

func newReconciler(cluster *db.Cluster, lxd *backend.LXD, flight *inflight, sockets governorSockets, l lifecycle, logger *slog.Logger, owner string) *reconciler {
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

// reconcile makes one pass: a single LXD listing per project, compared with the rows.
func (rc *reconciler) reconcile(ctx context.Context) error {
	client, err := rc.lxd.Client()
	if err != nil {
		return err
	}

	var rows []db.Instance
	var projects []string
	var members []db.Member
	deployments := map[string]int64{} // project/name -> id
	err = rc.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{})
		if err != nil {
			return err
		}

		all, err := db.GetDeployments(ctx, tx, db.DeploymentFilter{})
		if err != nil {
			return err
		}

		for _, d := range all {
			deployments[d.Project+"/"+d.Name] = d.ID
		}

		members, err = db.GetMembers(ctx, tx)
		if err != nil {
			return err
		}

		projects, err = db.GetProjects(ctx, tx)
		return err
	})
	if err != nil {
		return err
	}

	live := map[string]lxdapi.Instance{} // project/name -> instance
	for _, project := range projects {
		callStart := time.Now()
		instances, err := backend.ListInstances(client, project)
		rc.lifecycle.metrics.LXDCall("list", time.Since(callStart), err)
		if err != nil {
			if lxdapi.StatusErrorCheck(err, http.StatusNotFound) {
				continue // the LXD project does not exist (yet)
			}

			return err
		}

		for name, instance := range instances {
			live[project+"/"+name] = instance
		}
	}

	// An instance LXD is still working on (an operation our crashed predecessor started)
	// is left alone until LXD is done with it.
	busy, err := busyInstances(client, projects)
	if err != nil {
		return err
	}

	known := map[string]bool{}
	for _, row := range rows {
		key := row.Project + "/" + row.Name
		known[key] = true
		if rc.inflight.has(row.Project, row.Name) || busy[key] || othersInFlux(row, rc.owner, members, time.Now()) {
			continue
		}

		// Only an instance carrying our keys can stand for a row: an unrelated instance that
		// took the name of a missing one is not adopted.
		instance, exists := live[key]
		exists = exists && instance.Config[backend.ConfigDeployment] != ""
		rc.repair(ctx, client, row, exists, instance.StatusCode)
	}

	orphans := map[int64][]string{}
	tagged := map[string]lxdapi.Instance{} // instance URL -> instance
	for key, instance := range live {
		deployment := instance.Config[backend.ConfigDeployment]
		if deployment == "" || known[key] || busy[key] || instance.Config[backend.ConfigWarmPool] != "" {
			continue
		}

		id := deployments[instance.Project+"/"+deployment]
		if id == 0 {
			continue
		}

		url := api.InstanceURL(instance.Project, instance.Name)
		orphans[id] = append(orphans[id], url)
		tagged[url] = instance
	}

	// The list lives in dqlite so that every member answers with it; the write is fenced
	// by the reconcile lease, so a member that lost it cannot overwrite the new holder's.
	var added map[int64][]string
	err = rc.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if rc.fence != nil {
			err := rc.fence(ctx, tx)
			if err != nil {
				return err
			}
		}

		added, err = db.ReplaceOrphans(ctx, tx, orphans, time.Now())
		return err
	})
	if err != nil {
		return fmt.Errorf("record orphaned instances: %w", err)
	}

	for id, urls := range added {
		for _, url := range urls {
			instance := tagged[url]
			rc.logger.Warn("orphaned instance: tagged for a deployment but not recorded; not deleting it", "instance", instance.Name, "project", instance.Project, "deployment", instance.Config[backend.ConfigDeployment])
			rc.lifecycle.emit(internalRequestor("reconcile"), instance.Project, id, lifecycleInstanceOrphaned, url)
			rc.lifecycle.instanceChanged(ctx, id, lifecycleInstanceOrphaned, instance.Config[backend.ConfigShape], instance.Name)
		}
	}

	return nil
}

// othersGrace is how long a record another daemon left creating or deleting is assumed to
// be that daemon's work in progress.
const othersGrace = 10 * time.Minute

// othersInFlux reports whether a record is another member's launch or delete that may
// still be running: the member that changed it (owner) is online and has not restarted
// since, within the grace period. A dead or restarted member's work died with its process,
// so its records are repaired at once by whichever member reconciles.
func othersInFlux(row db.Instance, owner string, members []db.Member, now time.Time) bool {
	inFlux := row.State == db.InstanceCreating || row.State == db.InstanceDeleting
	if !inFlux || row.Owner == owner || now.Sub(row.StateChangedAt) >= othersGrace {
		return false
	}

	for _, m := range members {
		if m.DatabaseAddress == row.Owner {
			return now.Sub(m.HeartbeatAt) < offlineAfter && !m.StartedAt.After(row.StateChangedAt)
		}
	}

	// No member by that address: it was removed from the cluster, and stopped.
	return false
}

// repair fixes one row that no operation of this daemon is working on. Every write is a
// compare-and-set on the state it saw, so a concurrent change wins.
func (rc *reconciler) repair(ctx context.Context, client lxd.InstanceServer, row db.Instance, exists bool, status lxdapi.StatusCode) {
	source := api.DeploymentShapeInstanceURL(row.Project, row.Deployment, row.Shape, row.Name)
	setState := func(state string, also ...func(ctx context.Context, tx *sql.Tx) error) {
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

	removeRow := func(also ...func(ctx context.Context, tx *sql.Tx) error) {
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

	switch {
	case row.State == db.InstanceCreating && exists:
		// A crash came after LXD made it: adopt it rather than leave an orphan, and finish
		// the launch, which promised a started instance.
		rc.logger.Info("reconcile: adopting instance left creating by a crash", "instance", row.Name)
		if status == lxdapi.Stopped {
			callStart := time.Now()
			err := backend.UpdateInstanceState(ctx, client, row.Project, row.Name, lxdapi.InstanceStatePut{Action: "start", Timeout: -1})
			rc.lifecycle.metrics.LXDCall("state", time.Since(callStart), err)
			if err != nil {
				// An instance that does not start is no capacity: the launch never finished,
				// so it goes as a launch LXD refused does.
				rc.logger.Warn("reconcile: adopted instance does not start: deleting it", "instance", row.Name, "err", err)
				rc.removeUnfinished(ctx, client, row, removeRow)
				return
			}
		}

		setState(db.InstanceCreated)
	case row.State == db.InstanceCreating:
		// Undo what the reservation recorded, as a launch LXD refused does (launchDropped).
		rc.logger.Info("reconcile: removing row of an instance whose creation never finished", "instance", row.Name)
		removeRow(staleLaunchDropped(row))
	case row.State == db.InstanceDeleting && exists:
		// The bound check passed before the crash: finish the delete.
		callStart := time.Now()
		err := backend.DeleteInstance(ctx, client, row.Project, row.Name)
		rc.lifecycle.metrics.LXDCall("delete", time.Since(callStart), err)
		if err != nil {
			rc.logger.Warn("reconcile: finish interrupted delete", "instance", row.Name, "err", err)
			return
		}

		removeRow()
	case row.State == db.InstanceDeleting:
		removeRow()
	case row.State == db.InstanceCreated && !exists:
		rc.logger.Warn("reconcile: instance missing from LXD", "instance", row.Name, "project", row.Project)
		setState(db.InstanceMissing, reconcileActivity(row, -1, "instance "+row.Name+" is missing from LXD"))
		rc.lifecycle.emit(internalRequestor("reconcile"), row.Project, row.DeploymentID, lifecycleInstanceMissing, source)
		rc.lifecycle.instanceChanged(ctx, row.DeploymentID, lifecycleInstanceMissing, row.Shape, row.Name)
		rc.askReplacement(ctx, row)
	case row.State == db.InstanceMissing && exists:
		setState(db.InstanceCreated, reconcileActivity(row, +1, "instance "+row.Name+" is back in LXD"))
	}
}

// removeUnfinished deletes the instance of a launch that never finished, then its record
// with the launch undone; an instance LXD will not delete yet stays for the next round.
func (rc *reconciler) removeUnfinished(ctx context.Context, client lxd.InstanceServer, row db.Instance, removeRow func(also ...func(ctx context.Context, tx *sql.Tx) error)) {
	callStart := time.Now()
	err := backend.DeleteInstance(ctx, client, row.Project, row.Name)
	rc.lifecycle.metrics.LXDCall("delete", time.Since(callStart), err)
	if err != nil {
		rc.logger.Warn("reconcile: delete instance of an unfinished launch", "instance", row.Name, "err", err)
		return
	}

	removeRow(staleLaunchDropped(row))
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
