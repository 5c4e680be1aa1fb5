package fleet

import (
	"fmt"
	"sort"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// ResizeState is what one round of in-place updates sees: the shape's latest revision, the
// revisions its instances were made from, the instance records, and LXD's instances with
// their state (one listing for the round).
type ResizeState struct {
	Latest    int
	Revisions map[int]api.DeploymentShapePut
	Rows      []db.Instance
	Live      map[string]lxdapi.InstanceFull

	// Causes holds each kept revision's cause. With ResizesOnly (the in-place pass), an
	// instance is reached only when every revision after its own that changed live keys
	// is a resize: a template change (say limits.cpu through PUT with rollout.trigger
	// manual) waits for the rollout its operator starts.
	Causes      map[int]string
	ResizesOnly bool
}

// CauseResize is the cause of a resize's revision (rollout.CauseResize).
const CauseResize = "resize"

// ResizeStep brings one instance to the latest revision in place: the live keys to set
// ("" removes one). Relabel alone says LXD already holds the values.
type ResizeStep struct {
	Row     db.Instance
	Limits  map[string]string
	Relabel bool
}

// ResizePlan is a round's decision for every outdated instance.
type ResizePlan struct {
	Steps   []ResizeStep
	Refused map[string]string // instance -> why it is left outdated this round (retried)
	Skipped map[string]string // instance -> why in-place does not apply (a rollout's job)
}

// Pending says whether a later round may still change something.
func (p ResizePlan) Pending() bool {
	return len(p.Refused) > 0
}

// PlanResize decides, for each outdated instance, whether the latest revision reaches it in
// place: its revision differs from the latest only in live keys (shapes.LiveChanges; with
// ResizesOnly, changed by resizes alone), it is in LXD, and a lower memory limit leaves the margin above what it uses (shapes.SafeMemory).
func PlanResize(s ResizeState) ResizePlan {
	plan := ResizePlan{Refused: map[string]string{}, Skipped: map[string]string{}}
	if _, ok := s.Revisions[s.Latest]; !ok {
		return plan
	}

	rows := append([]db.Instance(nil), s.Rows...)
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	for _, row := range rows {
		if !shapes.Stale(row, s.Latest) {
			continue
		}

		live, why := s.livePath(row.Revision)
		if why != "" {
			plan.Skipped[row.Name] = why
			continue
		}

		inst, ok := s.Live[row.Name]
		if !ok {
			plan.Skipped[row.Name] = "not in LXD"
			continue
		}

		step := ResizeStep{Row: row, Limits: map[string]string{}}
		for key, value := range live {
			if inst.Config[key] != value {
				step.Limits[key] = value
			}
		}

		step.Relabel = len(step.Limits) == 0
		why = refuseResize(inst, step.Limits)
		if why != "" {
			plan.Refused[row.Name] = why
			continue
		}

		plan.Steps = append(plan.Steps, step)
	}

	return plan
}

// livePath returns the live keys that bring an instance of revision from to the latest, or
// why the latest cannot reach it in place.
func (s ResizeState) livePath(from int) (map[string]string, string) {
	latest, ok := s.Revisions[s.Latest]
	if !ok {
		return nil, fmt.Sprintf("revision %d is no longer kept", s.Latest)
	}

	fromShape, ok := s.Revisions[from]
	if !ok {
		return nil, fmt.Sprintf("revision %d is no longer kept", from)
	}

	live, ok := shapes.LiveChanges(fromShape, latest)
	if !ok {
		return nil, fmt.Sprintf("revision %d differs from %d in more than live limits: a rollout replaces it", from, s.Latest)
	}

	// An image change keeps the template as it was: nothing but live keys seems to change,
	// yet the instance needs the new image (shapes.InPlace reads the causes in between).
	if _, ok := shapes.InPlace(from, s.Revisions, s.Causes, s.Latest); !ok {
		return nil, fmt.Sprintf("the image changed after revision %d (or a revision in between is no longer kept): a rollout replaces it", from)
	}

	if !s.ResizesOnly {
		return live, ""
	}

	prev := fromShape
	for rev := from + 1; rev <= s.Latest; rev++ {
		shape, ok := s.Revisions[rev]
		if !ok {
			return nil, fmt.Sprintf("revision %d is no longer kept: a rollout brings it up to date", rev)
		}

		changed, _ := shapes.LiveChanges(prev, shape)
		if len(changed) > 0 && s.Causes[rev] != CauseResize {
			return nil, fmt.Sprintf("revision %d (cause %s) changed live limits: a rollout applies it", rev, s.Causes[rev])
		}

		prev = shape
	}

	return live, ""
}

// refuseResize says why new limits must not reach a running instance now ("" when they may).
func refuseResize(inst lxdapi.InstanceFull, limits map[string]string) string {
	memory, changes := limits[api.LimitMemory]
	if !changes || inst.StatusCode != lxdapi.Running {
		return "" // a stopped instance uses nothing: the limit applies at its next start
	}

	if inst.Type == string(lxdapi.InstanceTypeVM) {
		ok, why := shapes.VMMemory(memory, inst.Config[api.LimitMemory])
		if !ok {
			return why
		}
	}

	var usage int64
	if inst.State != nil {
		usage = inst.State.Memory.Usage
	}

	_, why := shapes.SafeMemory(memory, usage)
	return why
}

// Batches splits steps into groups of at most size (at least one per group).
func Batches(steps []ResizeStep, size int) [][]ResizeStep {
	size = max(size, 1)
	var out [][]ResizeStep
	for len(steps) > 0 {
		n := min(size, len(steps))
		out = append(out, steps[:n])
		steps = steps[n:]
	}

	return out
}
