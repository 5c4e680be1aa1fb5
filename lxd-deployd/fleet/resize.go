package fleet

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Resizer brings a shape's instances to its latest revision in place, when the revision
// differs from theirs only in keys LXD applies live: round after round, it reads LXD's
// instances with their state once, plans (PlanResize), and updates the instances in
// batches through LXD's own instance update (with each instance's ETag).
type Resizer struct {
	DB   *db.Cluster
	Conn func() (*backend.Conn, error)

	// Rounds is how many rounds to try before giving up on instances a shrink would not
	// fit (default 3), Interval the wait between rounds (default 5s).
	Rounds   int
	Interval time.Duration

	// Resized, when set, hears of each instance updated or refused (lifecycle events and
	// the governor's webhook).
	Resized func(row db.Instance, result api.DeploymentResizeResult)
}

// ResizeTarget names the shape a resize works on, who asked, and the batch size (at most
// that many instances are updated at once).
type ResizeTarget struct {
	DeploymentID int64
	ShapeID      int64
	Project      string
	Shape        string
	By           api.DeploymentRequestor
	Batch        int

	// Limit, when above 0, updates at most that many instances in a round (a rollout's
	// step moves a few at a time).
	Limit int

	// Replaces says that instances refused in place are replaced instead (a rollout): a
	// refusal is then no news, and is neither logged nor reported.
	Replaces bool

	// ResizesOnly reaches only instances whose live changes come from resizes (the
	// in-place pass: other template changes wait for their rollout; ResizeState.Causes).
	ResizesOnly bool
}

// ResizeProgress receives the per-instance results after every batch (the operation's
// metadata).
type ResizeProgress func(results map[string]api.DeploymentResizeResult, round int)

// Run does rounds until every instance it can reach in place is current, or the rounds are
// spent. It returns the last result per instance; instances left refused stay outdated.
func (r Resizer) Run(ctx context.Context, target ResizeTarget, progress ResizeProgress) (map[string]api.DeploymentResizeResult, error) {
	rounds := r.Rounds
	if rounds <= 0 {
		rounds = 3
	}

	interval := r.Interval
	if interval <= 0 {
		interval = 5 * time.Second
	}

	results := map[string]api.DeploymentResizeResult{}
	refusedBefore := map[string]bool{}
	for round := 1; round <= rounds; round++ {
		plan, err := r.round(ctx, target, results, refusedBefore, func() { progress(results, round) })
		if err != nil {
			return results, err
		}

		progress(results, round)
		if !plan.Pending() || round == rounds {
			break
		}

		select {
		case <-ctx.Done():
			return results, ctx.Err()
		case <-time.After(interval):
		}
	}

	return results, nil
}

// Once runs a single round: the rollout engine's in-place step. It returns the result per
// instance it considered; none when no outdated instance can be reached in place (then LXD
// is not even asked).
func (r Resizer) Once(ctx context.Context, target ResizeTarget) (map[string]api.DeploymentResizeResult, error) {
	results := map[string]api.DeploymentResizeResult{}
	_, err := r.round(ctx, target, results, map[string]bool{}, func() {})
	return results, err
}

// round observes, plans and applies once.
func (r Resizer) round(ctx context.Context, target ResizeTarget, results map[string]api.DeploymentResizeResult, refusedBefore map[string]bool, batchDone func()) (ResizePlan, error) {
	client, err := r.Conn()
	if err != nil {
		return ResizePlan{}, err
	}

	var state ResizeState
	err = r.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		state, err = resizeRecords(ctx, tx, target)
		return err
	})
	if err != nil {
		return ResizePlan{}, err
	}

	if !state.anyInPlace() {
		return ResizePlan{}, nil
	}

	// One LXD call for the whole round: every instance with its state (memory usage).
	listing, err := backend.ListInstancesFull(client, target.Project)
	if err != nil {
		return ResizePlan{}, fmt.Errorf("list LXD instances: %w", err)
	}

	state.Live = map[string]lxdapi.InstanceFull{}
	for _, inst := range listing {
		state.Live[inst.Name] = inst
	}

	plan := PlanResize(state)
	for name, why := range plan.Skipped {
		results[name] = api.DeploymentResizeResult{Result: api.ResizeSkipped, Reason: why}
	}

	err = r.reportRefusals(ctx, target, state, plan, results, refusedBefore)
	if err != nil {
		return plan, err
	}

	if target.Limit > 0 && len(plan.Steps) > target.Limit {
		plan.Steps = plan.Steps[:target.Limit]
	}

	for _, batch := range Batches(plan.Steps, target.Batch) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, step := range batch {
			wg.Add(1)
			go func(step ResizeStep) {
				defer wg.Done()
				result := r.apply(ctx, client, target, state.Latest, backend.TemplateHash(state.Revisions[state.Latest].InstanceTemplate), step)
				mu.Lock()
				results[step.Row.Name] = result
				mu.Unlock()
				if r.Resized != nil && !step.Relabel {
					r.Resized(step.Row, result)
				}
			}(step)
		}

		wg.Wait()
		batchDone()
		if ctx.Err() != nil {
			return plan, ctx.Err()
		}
	}

	// A failed LXD update is retried like a refusal.
	for name, result := range results {
		if result.Result == api.ResizeFailed {
			plan.Refused[name] = result.Reason
		}
	}

	return plan, nil
}

// reportRefusals records the instances a round leaves refused in the results, and says so
// (a resize-refused activity entry, then Resized) once per instance and revision: not on
// every round of an operation, nor again when the in-place pass (resize_pass.go) retries
// it later or after a restart. The activity log is what remembers, read in the transaction
// that writes the new entries.
func (r Resizer) reportRefusals(ctx context.Context, target ResizeTarget, state ResizeState, plan ResizePlan, results map[string]api.DeploymentResizeResult, refusedBefore map[string]bool) error {
	var fresh []db.Instance
	for _, row := range state.Rows {
		why, refused := plan.Refused[row.Name]
		if !refused {
			continue
		}

		results[row.Name] = api.DeploymentResizeResult{Result: api.ResizeRefused, Reason: why, Limits: LimitsOf(state.Live[row.Name].Config)}
		if !refusedBefore[row.Name] && !target.Replaces {
			fresh = append(fresh, row)
		}
	}

	if len(fresh) == 0 {
		return nil
	}

	var told []db.Instance
	err := r.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		told = nil
		said, err := refusalsSaid(ctx, tx, target, state.Latest)
		if err != nil {
			return err
		}

		for _, row := range fresh {
			if said[row.Name] {
				continue
			}

			err = RecordActivity(ctx, tx, target.DeploymentID, api.DeploymentActivity{Shape: target.Shape, Action: "resize-refused", From: row.Revision, To: state.Latest, Requestor: target.By, Why: row.Name + ": " + plan.Refused[row.Name]})
			if err != nil {
				return err
			}

			told = append(told, row)
		}

		return nil
	})
	if err != nil {
		return err
	}

	for _, row := range fresh {
		refusedBefore[row.Name] = true
	}

	if r.Resized != nil {
		for _, row := range told {
			r.Resized(row, results[row.Name])
		}
	}

	return nil
}

// refusalsSaid names the instances of a shape whose refusal at a revision the activity log
// already holds.
func refusalsSaid(ctx context.Context, tx *sql.Tx, target ResizeTarget, latest int) (map[string]bool, error) {
	entries, err := db.GetActivity(ctx, tx, db.ActivityFilter{DeploymentID: target.DeploymentID, Shape: target.Shape})
	if err != nil {
		return nil, err
	}

	said := map[string]bool{}
	for _, e := range entries {
		if e.Action != "resize-refused" || e.To != latest {
			continue
		}

		name, _, ok := strings.Cut(e.Why, ": ")
		if ok {
			said[name] = true
		}
	}

	return said, nil
}

// anyInPlace says whether some outdated instance could be brought up to date in place,
// from the records alone: a round with none asks LXD nothing.
func (s ResizeState) anyInPlace() bool {
	for _, row := range s.Rows {
		if !shapes.Stale(row, s.Latest) {
			continue
		}

		_, why := s.livePath(row.Revision)
		if why == "" {
			return true
		}
	}

	return false
}

// resizeRecords reads the shape's latest revision, its instances and the revisions they
// were made from.
func resizeRecords(ctx context.Context, tx *sql.Tx, target ResizeTarget) (ResizeState, error) {
	all, err := db.GetShapes(ctx, tx, db.ShapeFilter{DeploymentID: target.DeploymentID})
	if err != nil {
		return ResizeState{}, err
	}

	state := ResizeState{Revisions: map[int]api.DeploymentShapePut{}, Causes: map[int]string{}, ResizesOnly: target.ResizesOnly}
	found := false
	for _, s := range all {
		if s.ID == target.ShapeID {
			state.Latest, found = s.Revision, true
		}
	}

	if !found {
		return state, fmt.Errorf("shape %s is gone", target.Shape)
	}

	state.Rows, err = db.GetInstances(ctx, tx, db.InstanceFilter{ShapeID: target.ShapeID})
	if err != nil {
		return state, err
	}

	revisions, err := db.GetRevisions(ctx, tx, target.ShapeID, 0)
	if err != nil {
		return state, err
	}

	for _, rev := range revisions {
		state.Revisions[rev.Revision] = rev.Shape
		state.Causes[rev.Revision] = rev.Cause
	}

	return state, nil
}

// apply updates one instance's limits in LXD (unless LXD holds them already), then moves
// its record to the latest revision and its template's hash (so that a scale-in may
// return it to the warm pool like any current instance).
func (r Resizer) apply(ctx context.Context, client *backend.Conn, target ResizeTarget, latest int, templateHash string, step ResizeStep) api.DeploymentResizeResult {
	failed := func(err error) api.DeploymentResizeResult {
		return api.DeploymentResizeResult{Result: api.ResizeFailed, Reason: err.Error()}
	}

	limits := map[string]string{}
	if !step.Relabel {
		err := backend.SafeLimits(step.Limits)
		if err != nil {
			return failed(err)
		}

		inst, etag, err := backend.ReadInstance(client, target.Project, step.Row.Name)
		if err != nil {
			return failed(fmt.Errorf("read instance: %w", err))
		}

		for key, value := range step.Limits {
			if value == "" {
				delete(inst.Config, key)
			} else {
				inst.Config[key] = value
			}
		}

		err = backend.UpdateInstance(ctx, client, target.Project, step.Row.Name, inst.Writable(), etag)

		if err != nil {
			// LXD refuses a memory limit the cgroup cannot reclaim down to; say so plainly.
			return failed(fmt.Errorf("LXD did not apply %s: %w", describeLimits(step.Limits), err))
		}

		limits = LimitsOf(inst.Config)
	}

	err := r.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		err := db.SetInstanceRevisionFrom(ctx, tx, step.Row.ID, step.Row.Revision, latest, templateHash)
		if err != nil {
			return err
		}

		if step.Relabel {
			return nil
		}

		return RecordActivity(ctx, tx, target.DeploymentID, api.DeploymentActivity{Shape: target.Shape, Action: "resize", From: step.Row.Revision, To: latest, Requestor: target.By, Why: step.Row.Name + ": " + describeLimits(step.Limits)})
	})
	if errors.Is(err, db.ErrInstanceChanged) {
		return api.DeploymentResizeResult{Result: api.ResizeSkipped, Reason: "the instance record changed meanwhile", Limits: limits}
	}

	if err != nil {
		return failed(err)
	}

	return api.DeploymentResizeResult{Result: api.ResizeApplied, Limits: limits}
}

// LimitsOf picks the live keys out of an instance config: the limits it runs with.
func LimitsOf(config map[string]string) map[string]string {
	out := map[string]string{}
	for key, value := range config {
		if shapes.LiveKeys[key] {
			out[key] = value
		}
	}

	return out
}

// describeLimits writes limits as key=value, sorted ("limits.memory=" removes one).
func describeLimits(limits map[string]string) string {
	parts := make([]string, 0, len(limits))
	for key, value := range limits {
		parts = append(parts, key+"="+value)
	}

	sort.Strings(parts)
	return strings.Join(parts, " ")
}
