package main

import (
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Reconcile observes (reconcileView: the records and one snapshot of LXD), plans
// (planReconcile, a pure function with table tests) and acts (reconciler.apply).

// reconcileView is what one reconcile pass observes.
type reconcileView struct {
	rows        []db.Instance
	members     []db.Member
	deployments map[string]int64 // project/name -> id
	live        lxdSnapshot

	// busy holds the project/name of instances an LXD operation is working on; inflight
	// says whether this daemon is launching or deleting an instance right now.
	busy     map[string]bool
	inflight func(project string, name string) bool
}

// repairAction is what reconcile does to one instance record.
type repairAction int

const (
	repairNone repairAction = iota

	// repairAdopt: a crash came after LXD made the instance: adopt it (start it if it is
	// stopped; one that does not start goes as repairDropLaunch does).
	repairAdopt

	// repairDropLaunch: the launch never got as far as LXD: the record goes, the launch
	// undone.
	repairDropLaunch

	// repairFinishDelete: a delete was cut short: delete the instance, then the record.
	repairFinishDelete

	// repairRemoveRecord: the delete was done in LXD: only the record is left.
	repairRemoveRecord

	// repairMissing: LXD lost a created instance: record it missing.
	repairMissing

	// repairBack: a missing instance is back in LXD: it counts again.
	repairBack
)

// planRepair decides what one record needs, given whether LXD holds the instance (with
// our keys).
func planRepair(row db.Instance, exists bool) repairAction {
	switch {
	case row.State == db.InstanceCreating && exists:
		return repairAdopt
	case row.State == db.InstanceCreating:
		return repairDropLaunch
	case row.State == db.InstanceDeleting && exists:
		return repairFinishDelete
	case row.State == db.InstanceDeleting:
		return repairRemoveRecord
	case row.State == db.InstanceCreated && !exists:
		return repairMissing
	case row.State == db.InstanceMissing && exists:
		return repairBack
	}

	return repairNone
}

// repairStep is one record to repair.
type repairStep struct {
	row    db.Instance
	action repairAction
	status lxdapi.StatusCode // LXD's status of the instance, when it exists
}

// reconcilePlan is what one pass does: repair records, and record the orphans (instances
// tagged for a deployment nobody records) by deployment.
type reconcilePlan struct {
	repairs []repairStep
	orphans map[int64][]string         // deployment id -> instance URLs
	tagged  map[string]lxdapi.Instance // instance URL -> instance
}

// planReconcile compares the records with LXD. Records some operation is working on (this
// daemon's, LXD's own, or another live member's within its grace) are left alone.
func planReconcile(v reconcileView, owner string, now time.Time) reconcilePlan {
	p := reconcilePlan{orphans: map[int64][]string{}, tagged: map[string]lxdapi.Instance{}}
	known := map[string]bool{}
	for _, row := range v.rows {
		key := snapshotKey(row.Project, row.Name)
		known[key] = true
		if v.inflight(row.Project, row.Name) || v.busy[key] || othersInFlux(row, owner, v.members, now) {
			continue
		}

		// Only an instance carrying our keys can stand for a row: an unrelated instance that
		// took the name of a missing one is not adopted.
		instance, exists := v.live[key]
		exists = exists && instance.Config[backend.ConfigDeployment] != ""
		action := planRepair(row, exists)
		if action != repairNone {
			p.repairs = append(p.repairs, repairStep{row: row, action: action, status: instance.StatusCode})
		}
	}

	for key, instance := range v.live {
		deployment := instance.Config[backend.ConfigDeployment]
		if deployment == "" || known[key] || v.busy[key] || instance.Config[backend.ConfigWarmPool] != "" {
			continue
		}

		id := v.deployments[instance.Project+"/"+deployment]
		if id == 0 {
			continue
		}

		url := api.InstanceURL(instance.Project, instance.Name)
		p.orphans[id] = append(p.orphans[id], url)
		p.tagged[url] = instance
	}

	return p
}
