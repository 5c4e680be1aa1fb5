package fleet

import (
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
)

// TestPlanRepair walks every instance state with LXD holding the instance or not.
func TestPlanRepair(t *testing.T) {
	want := map[string][2]RepairAction{ // state -> {LXD has it, LXD does not}
		db.InstanceCreating:  {RepairAdopt, RepairDropLaunch},
		db.InstanceCreated:   {RepairNone, RepairMissing},
		db.InstanceDeleting:  {RepairFinishDelete, RepairRemoveRecord},
		db.InstanceMissing:   {RepairBack, RepairNone},
		db.InstanceReplacing: {RepairNone, RepairNone},
	}

	for _, state := range db.InstanceStates {
		for i, exists := range []bool{true, false} {
			got := PlanRepair(db.Instance{State: state}, exists)
			if got != want[state][i] {
				t.Errorf("%s, in LXD %v: %v, want %v", state, exists, got, want[state][i])
			}
		}
	}
}

// TestPlanReconcile: records an operation works on are left alone; only instances with our
// keys stand for records; tagged instances nobody records are orphans of their deployment,
// unless they are warm pool instances, busy, or of a deployment that does not exist.
func TestPlanReconcile(t *testing.T) {
	now := time.Now()
	ours := func(name string, deployment string) lxdapi.Instance {
		return lxdapi.Instance{Name: name, Project: "default", StatusCode: lxdapi.Running, Config: map[string]string{backend.ConfigDeployment: deployment}}
	}

	pool := ours("pool1", "dep1")
	pool.Config[backend.ConfigWarmPool] = "web"
	row := func(name string, state string) db.Instance {
		return db.Instance{Project: "default", Name: name, State: state, Owner: "me", StateChangedAt: now}
	}

	v := ReconcileView{
		Rows: []db.Instance{
			row("gone", db.InstanceCreated),       // missing from LXD
			row("flying", db.InstanceCreating),    // this daemon launches it now
			row("busy", db.InstanceDeleting),      // LXD works on it
			row("foreign", db.InstanceCreated),    // LXD has an instance by that name, not ours
			row("half", db.InstanceCreating),      // a crash after LXD made it
			row("fine", db.InstanceCreated),       // nothing to do
			row("undeleted", db.InstanceDeleting), // LXD deleted it, the record stayed
		},
		Deployments: map[string]int64{"default/dep1": 7},
		Live: Snapshot{
			"default/busy":    ours("busy", "dep1"),
			"default/foreign": {Name: "foreign", Project: "default", Config: map[string]string{}},
			"default/half":    ours("half", "dep1"),
			"default/fine":    ours("fine", "dep1"),
			"default/orphan":  ours("orphan", "dep1"),
			"default/pool1":   pool,
			"default/other":   ours("other", "nodeployment"),
			"default/busy2":   ours("busy2", "dep1"),
		},
		Busy:     map[string]bool{"default/busy": true, "default/busy2": true},
		Inflight: func(project string, name string) bool { return name == "flying" },
	}

	p := PlanReconcile(v, "me", now)
	got := map[string]RepairAction{}
	for _, step := range p.Repairs {
		got[step.Row.Name] = step.Action
	}

	want := map[string]RepairAction{"gone": RepairMissing, "foreign": RepairMissing, "half": RepairAdopt, "undeleted": RepairRemoveRecord}
	if len(got) != len(want) {
		t.Fatalf("repairs %v, want %v", got, want)
	}

	for name, action := range want {
		if got[name] != action {
			t.Errorf("%s: %v, want %v", name, got[name], action)
		}
	}

	if len(p.Orphans) != 1 || len(p.Orphans[7]) != 1 || p.Orphans[7][0] != "/1.0/instances/orphan" {
		t.Fatalf("orphans %v, want dep1's orphan only", p.Orphans)
	}
}
