package fleet

import (
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func resizeRevision(memory string, alias string) api.DeploymentShapePut {
	put := api.DeploymentShapePut{}
	put.InstanceTemplate.Source.Alias = alias
	put.InstanceTemplate.Config = map[string]string{api.LimitMemory: memory}
	return put
}

func liveInstance(memory string, status lxdapi.StatusCode, usage int64, vm bool) lxdapi.InstanceFull {
	inst := lxdapi.InstanceFull{}
	inst.Config = map[string]string{api.LimitMemory: memory}
	inst.StatusCode = status
	inst.Type = string(lxdapi.InstanceTypeContainer)
	if vm {
		inst.Type = string(lxdapi.InstanceTypeVM)
	}

	inst.State = &lxdapi.InstanceState{Memory: lxdapi.InstanceStateMemory{Usage: usage}}
	return inst
}

func TestPlanResize(t *testing.T) {
	const mib = 1 << 20
	revisions := map[int]api.DeploymentShapePut{
		1: resizeRevision("256MiB", "busybox"),
		2: resizeRevision("256MiB", "other"), // another image: not in place
		3: resizeRevision("64MiB", "busybox"),
	}

	row := func(name string, revision int, state string) db.Instance {
		return db.Instance{Name: name, Revision: revision, State: state}
	}

	state := ResizeState{
		Latest:    3,
		Revisions: revisions,
		Causes:    map[int]string{1: "api", 2: "api", 3: "resize"},
		Rows: []db.Instance{
			row("rz-idle", 1, db.InstanceCreated),
			row("rz-full", 1, db.InstanceCreated),
			row("rz-stopped", 1, db.InstanceCreated),
			row("rz-image", 2, db.InstanceCreated),
			row("rz-current", 3, db.InstanceCreated),
			row("rz-creating", 1, db.InstanceCreating),
			row("rz-gone", 1, db.InstanceCreated),
			row("rz-pruned", 0, db.InstanceCreated),
			row("rz-already", 1, db.InstanceCreated),
			row("rz-vm", 1, db.InstanceCreated),
		},
		Live: map[string]lxdapi.InstanceFull{
			"rz-idle":    liveInstance("256MiB", lxdapi.Running, 4*mib, false),
			"rz-full":    liveInstance("256MiB", lxdapi.Running, 104*mib, false),
			"rz-stopped": liveInstance("256MiB", lxdapi.Stopped, 0, false),
			"rz-image":   liveInstance("256MiB", lxdapi.Running, 4*mib, false),
			"rz-current": liveInstance("64MiB", lxdapi.Running, 4*mib, false),
			"rz-already": liveInstance("64MiB", lxdapi.Running, 4*mib, false),
			"rz-vm":      liveInstance("256MiB", lxdapi.Running, 10*mib, true),
		},
	}

	plan := PlanResize(state)
	steps := map[string]ResizeStep{}
	for _, s := range plan.Steps {
		steps[s.Row.Name] = s
	}

	for _, name := range []string{"rz-idle", "rz-stopped", "rz-vm"} {
		if s, ok := steps[name]; !ok || s.Relabel || s.Limits[api.LimitMemory] != "64MiB" {
			t.Errorf("%s: want a step to 64MiB, got %+v (plan %+v)", name, s, plan)
		}
	}

	if s, ok := steps["rz-already"]; !ok || !s.Relabel {
		t.Errorf("rz-already: LXD holds 64MiB already: want a relabel, got %+v", s)
	}

	if plan.Refused["rz-full"] == "" || !plan.Pending() {
		t.Errorf("rz-full uses 104MiB: want it refused, got %+v", plan)
	}

	for _, name := range []string{"rz-image", "rz-gone", "rz-pruned"} {
		if plan.Skipped[name] == "" {
			t.Errorf("%s: want it skipped, got %+v", name, plan)
		}
	}

	for _, name := range []string{"rz-current", "rz-creating"} {
		if _, ok := steps[name]; ok || plan.Skipped[name] != "" || plan.Refused[name] != "" {
			t.Errorf("%s: want nothing, got %+v", name, plan)
		}
	}

	// A VM cannot grow past its boot memory.
	state.Latest = 4
	state.Revisions[4] = resizeRevision("1GiB", "busybox")
	state.Causes[4] = "resize"
	plan = PlanResize(state)
	if plan.Refused["rz-vm"] == "" || plan.Refused["rz-full"] != "" {
		t.Errorf("growing: want only rz-vm refused, got %+v", plan.Refused)
	}
}

func TestBatches(t *testing.T) {
	steps := make([]ResizeStep, 5)
	for size, want := range map[int]int{0: 5, 1: 5, 2: 3, 5: 1, 9: 1} {
		if got := len(Batches(steps, size)); got != want {
			t.Errorf("size %d: %d batches, want %d", size, got, want)
		}
	}

	if len(Batches(nil, 2)) != 0 {
		t.Error("no steps, no batches")
	}
}

// TestPlanResizeResizesOnly: the in-place pass reaches an instance only through revisions
// whose live changes are resizes; a template change of a live key by another cause waits
// for its rollout, and a revision in between no longer kept is not guessed at.
func TestPlanResizeResizesOnly(t *testing.T) {
	revisions := map[int]api.DeploymentShapePut{
		1: resizeRevision("256MiB", "busybox"),
		2: resizeRevision("128MiB", "busybox"), // a resize
		3: resizeRevision("128MiB", "busybox"), // no live change (a description, say)
		4: resizeRevision("96MiB", "busybox"),  // limits.memory through PUT of the shape
		5: resizeRevision("64MiB", "busybox"),  // a resize
	}

	causes := map[int]string{1: "api", 2: CauseResize, 3: "api", 4: "api", 5: CauseResize}
	live := map[string]lxdapi.InstanceFull{"rz-a": liveInstance("256MiB", lxdapi.Running, 1<<20, false)}
	plan := func(latest int, from int, kept map[int]api.DeploymentShapePut) ResizePlan {
		return PlanResize(ResizeState{Latest: latest, Revisions: kept, Causes: causes, ResizesOnly: true, Live: live,
			Rows: []db.Instance{{Name: "rz-a", Revision: from, State: db.InstanceCreated}}})
	}

	p := plan(3, 1, revisions)
	if len(p.Steps) != 1 || p.Steps[0].Limits[api.LimitMemory] != "128MiB" {
		t.Fatalf("1 -> 3 through a resize and a change of no live key: %+v, want a step to 128MiB", p)
	}

	p = plan(5, 1, revisions)
	if len(p.Steps) != 0 || p.Skipped["rz-a"] != "revision 4 (cause api) changed live limits: a rollout applies it" {
		t.Fatalf("1 -> 5 through revision 4 (api): %+v, want skipped", p)
	}

	gap := map[int]api.DeploymentShapePut{1: revisions[1], 3: revisions[3]}
	p = plan(3, 1, gap)
	if len(p.Steps) != 0 || p.Skipped["rz-a"] != "revision 2 is no longer kept: a rollout brings it up to date" {
		t.Fatalf("1 -> 3 with revision 2 pruned: %+v, want skipped", p)
	}

	// Without ResizesOnly (a resize operation, a rollout) only the ends matter.
	p = PlanResize(ResizeState{Latest: 5, Revisions: revisions, Causes: causes, Live: live,
		Rows: []db.Instance{{Name: "rz-a", Revision: 1, State: db.InstanceCreated}}})
	if len(p.Steps) != 1 || p.Steps[0].Limits[api.LimitMemory] != "64MiB" {
		t.Fatalf("1 -> 5 for an operation: %+v, want a step to 64MiB", p)
	}
}

// An image change keeps the template as it was, and would look like a change of nothing
// live: its instances need the new image all the same, so a rollout replaces them.
func TestPlanResizeImageChangeIsNeverInPlace(t *testing.T) {
	state := ResizeState{
		Latest:    3,
		Revisions: map[int]api.DeploymentShapePut{1: resizeRevision("256MiB", "busybox"), 2: resizeRevision("256MiB", "busybox"), 3: resizeRevision("128MiB", "busybox")},
		Causes:    map[int]string{1: "api", 2: "image-change", 3: "resize"},
		Rows:      []db.Instance{{Name: "rz-old", Revision: 1, State: db.InstanceCreated}, {Name: "rz-new", Revision: 2, State: db.InstanceCreated}},
		Live: map[string]lxdapi.InstanceFull{
			"rz-old": liveInstance("256MiB", lxdapi.Running, 1<<20, false),
			"rz-new": liveInstance("256MiB", lxdapi.Running, 1<<20, false),
		},
	}

	plan := PlanResize(state)
	if len(plan.Steps) != 1 || plan.Steps[0].Row.Name != "rz-new" || plan.Skipped["rz-old"] == "" {
		t.Fatalf("want rz-new resized in place and rz-old (from before the image change) left to a rollout, got %+v", plan)
	}

	delete(state.Causes, 2) // whether the image changed is unknown
	plan = PlanResize(state)
	if plan.Skipped["rz-old"] == "" {
		t.Fatalf("an instance from before a revision of unknown cause was planned in place: %+v", plan)
	}
}
