package fleet

import (
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Reconcile observes (ReconcileView: the records and one snapshot of LXD), plans
// (PlanReconcile, a pure function with table tests) and acts (reconciler.apply).

// ReconcileView is what one reconcile pass observes.
type ReconcileView struct {
	Rows        []db.Instance
	Members     []db.Member
	Deployments map[string]int64 // project/name -> id
	Live        Snapshot

	// busy holds the project/name of instances an LXD operation is working on; inflight
	// says whether this daemon is launching or deleting an instance right now.
	Busy     map[string]bool
	Inflight func(project string, name string) bool

	// OfflineAfter is how long without a heartbeat a member counts as offline (OthersInFlux).
	OfflineAfter time.Duration
}

// RepairAction is what reconcile does to one instance record.
type RepairAction int

const (
	RepairNone RepairAction = iota

	// RepairAdopt: a crash came after LXD made the instance: adopt it (start it if it is
	// stopped; one that does not start goes as RepairDropLaunch does).
	RepairAdopt

	// RepairDropLaunch: the launch never got as far as LXD: the record goes, the launch
	// undone.
	RepairDropLaunch

	// RepairFinishDelete: a delete was cut short: delete the instance, then the record.
	RepairFinishDelete

	// RepairRemoveRecord: the delete was done in LXD: only the record is left.
	RepairRemoveRecord

	// RepairMissing: LXD lost a created instance: record it missing.
	RepairMissing

	// RepairBack: a missing instance is back in LXD: it counts again.
	RepairBack
)

// PlanRepair decides what one record needs, given whether LXD holds the instance (with
// our keys).
func PlanRepair(row db.Instance, exists bool) RepairAction {
	switch {
	case row.State == db.InstanceCreating && exists:
		return RepairAdopt
	case row.State == db.InstanceCreating:
		return RepairDropLaunch
	case row.State == db.InstanceDeleting && exists:
		return RepairFinishDelete
	case row.State == db.InstanceDeleting:
		return RepairRemoveRecord
	case row.State == db.InstanceCreated && !exists:
		return RepairMissing
	case row.State == db.InstanceMissing && exists:
		return RepairBack
	}

	return RepairNone
}

// RepairStep is one record to repair.
type RepairStep struct {
	Row    db.Instance
	Action RepairAction
	Status lxdapi.StatusCode // LXD's status of the instance, when it exists
}

// ReconcilePlan is what one pass does: repair records, and record the orphans (instances
// tagged for a deployment nobody records) by deployment.
type ReconcilePlan struct {
	Repairs []RepairStep
	Orphans map[int64][]string         // deployment id -> instance URLs
	Tagged  map[string]lxdapi.Instance // instance URL -> instance
}

// PlanReconcile compares the records with LXD. Records some operation is working on (this
// daemon's, LXD's own, or another live member's within its grace) are left alone.
func PlanReconcile(v ReconcileView, owner string, now time.Time) ReconcilePlan {
	p := ReconcilePlan{Orphans: map[int64][]string{}, Tagged: map[string]lxdapi.Instance{}}
	known := map[string]bool{}
	for _, row := range v.Rows {
		key := SnapshotKey(row.Project, row.Name)
		known[key] = true
		if v.Inflight(row.Project, row.Name) || v.Busy[key] || OthersInFlux(row, owner, v.Members, v.OfflineAfter, now) {
			continue
		}

		// Only an instance carrying our keys can stand for a Row: an unrelated instance that
		// took the name of a missing one is not adopted.
		instance, exists := v.Live[key]
		exists = exists && instance.Config[backend.ConfigDeployment] != ""
		action := PlanRepair(row, exists)
		if action != RepairNone {
			p.Repairs = append(p.Repairs, RepairStep{Row: row, Action: action, Status: instance.StatusCode})
		}
	}

	for key, instance := range v.Live {
		deployment := instance.Config[backend.ConfigDeployment]
		if deployment == "" || known[key] || v.Busy[key] || instance.Config[backend.ConfigWarmPool] != "" {
			continue
		}

		id := v.Deployments[instance.Project+"/"+deployment]
		if id == 0 {
			continue
		}

		url := api.InstanceURL(instance.Project, instance.Name)
		p.Orphans[id] = append(p.Orphans[id], url)
		p.Tagged[url] = instance
	}

	return p
}
