package fleet

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"sync"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/health"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/loop"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	shapeRules "github.com/lxd-deployd/lxd-deployd/lxd-deployd/shapes"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
)

// Autohealing: an instance of a shape with health.replace that is unhealthy past its
// threshold, or missing from LXD, is replaced by the daemon itself: a new instance (the
// shape's latest template), and the old one goes. It is not scaling: the old instance
// leaves the count in the same transaction that reserves the new one, so the size stays
// what the governor made it and the bound check still holds in that one transaction.
// Below the maximum the replacement is made first (no capacity is lost meanwhile); at the
// maximum the old instance is deleted first, so that LXD never holds more than the maximum
// (as AWS and GCE autohealing do).

const (
	// maxReplaceFailures replacements in a row that never became healthy (or could not be
	// made) stop autohealing of a shape: replacing every instance of a broken shape in a
	// loop helps nobody.
	maxReplaceFailures = 3
)

// unavailabilityBudget is how many instances of a shape may be out of service at once for
// replacements. Autohealing takes from it now; rollouts will take from the same budget.
type unavailabilityBudget interface {
	// take claims one unit inside the reservation's transaction, or refuses with a 409.
	take(ctx context.Context, tx *sql.Tx, shape *db.Shape) error
}

// replacingBudget counts the shape's instances in state replacing against
// health.max_unavailable (default 1), and gives way to a running rollout. Being in the
// database, it holds across a cluster.
type replacingBudget struct{}

func (replacingBudget) take(ctx context.Context, tx *sql.Tx, shape *db.Shape) error {
	limit := health.DefaultMaxUnavailable
	settings, ok := health.Parse(shape.Health)
	if ok {
		limit = settings.MaxUnavailable
	}

	if shape.Replacing >= limit {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s already replaces %d instances (health.max_unavailable is %d): wait for them", shape.Name, shape.Replacing, limit)
	}

	// A running rollout holds the shape's unavailability budget (its own max_unavailable
	// and surge): autohealing waits for it rather than take instances out beside it. A
	// rollout waits for health, so it does not step past unhealthy new instances either.
	rollout, err := db.GetActiveRollout(ctx, tx, shape.ID)
	if err != nil {
		return err
	}

	if rollout != nil && rollout.Status == api.RolloutRunning {
		return lxdapi.StatusErrorf(http.StatusConflict, "shape %s has a running rollout (%d): autohealing waits for it to finish or pause", shape.Name, rollout.Number)
	}

	return nil
}

// errGiveUp says a shape has had maxReplaceFailures failed replacements in a row.
var errGiveUp = errors.New("too many failed replacements in a row")

// Autohealer finds instances to replace and replaces them, on the holder of the instances
// lease.
type Autohealer struct {
	db     *db.Cluster
	fleet  *Fleet
	budget unavailabilityBudget
	logger *slog.Logger
	owner  string
	wake   loop.Loop

	mu     sync.Mutex
	active map[int64]bool // rows of old instances this daemon is replacing
	wg     sync.WaitGroup

	// starts are when this daemon's recent replacements started, by shape id, for
	// health.replacement_limit (a member that takes over the lease starts a new count).
	starts map[int64][]time.Time

	// settle is, by shape id, until when a shape whose hold lifted replaces nothing for a
	// verdict (autoheal_hold_record.go).
	settle map[int64]time.Time

	// unhealthySince is when the rounds first saw each unhealthy instance, by row id
	// (correlationWindow).
	unhealthySince map[int64]time.Time
}

func newAutohealer(f *Fleet) *Autohealer {
	return &Autohealer{db: f.db, fleet: f, budget: replacingBudget{}, logger: f.logger, owner: f.owner, wake: loop.New(), active: map[int64]bool{}, starts: map[int64][]time.Time{}, settle: map[int64]time.Time{}, unhealthySince: map[int64]time.Time{}}
}

// Poke makes the autohealer look now rather than at its next tick (nil: no autohealing).
func (h *Autohealer) Poke() {
	if h != nil {
		h.wake.Poke()
	}
}

// HealthChanged hears the health checker's verdicts: it tells /1.0/events and the
// governor, and looks for replacements at once when an instance turned unhealthy.
func (h *Autohealer) HealthChanged(ctx context.Context, c health.Change) {
	row := c.Instance
	action := reporter.InstanceHealthy
	if c.After.Status == api.HealthUnhealthy {
		action = reporter.InstanceUnhealthy
		h.Poke()
	}

	h.fleet.reporter.Send(api.InternalRequestor("health"), row.DeploymentID, action.Event(refs.Instance(row), nil))
	h.fleet.reporter.Notify(ctx, row.DeploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(action), Shape: row.Shape, Instance: row.Name, Reason: health.Summary(c.After)})
}

// Run looks for instances to replace until ctx ends, then waits for the replacements it
// started, which run to the end as launches and deletes do.
func (h *Autohealer) Run(ctx context.Context, interval time.Duration) {
	defer h.wg.Wait()
	h.wake.Run(ctx, interval, h.logger, "autohealing", h.round)
}

// round starts a replacement of every instance that needs one (the budget, checked in each
// reservation, holds them back), and finishes replacements a crash interrupted.
func (h *Autohealer) round(ctx context.Context) error {
	if !h.fleet.lxd.Status().Online {
		return nil
	}

	var shapes []db.Shape
	var rows []db.Instance
	var counts map[int64]map[string]db.LocationHealth
	members := h.fleet.members()
	err := h.db.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		shapes, err = db.GetShapes(ctx, tx, db.ShapeFilter{})
		if err != nil {
			return err
		}

		rows, err = healCandidates(ctx, tx, shapes, members)
		if err != nil {
			return err
		}

		var ids []int64
		for _, s := range healingShapes(shapes) {
			ids = append(ids, s.ID)
		}

		counts, err = db.GetHealthByLocation(ctx, tx, ids)
		return err
	})
	if err != nil {
		return err
	}

	now := time.Now()
	unreachable := func(location string) bool { return shapeRules.Unreachable(location, members) }
	steps := h.freshReachability(PlanHealing(shapes, rows, h.activeRows(), h.owner, now, unreachable))
	h.mu.Lock()
	holds := PlanHolds(shapes, counts, rows, h.starts, now)
	h.noteUnhealthy(rows, now)
	h.mu.Unlock()
	h.recordHolds(ctx, shapes, holds, steps)

	h.mu.Lock()
	defer h.mu.Unlock()
	for _, step := range steps {
		if h.active[step.Row.ID] {
			continue // started meanwhile
		}

		if step.Finish {
			h.start(step.Row, func(ctx context.Context) { _ = h.removeOld(ctx, step.Row, api.InternalRequestor("autoheal")) })
			continue
		}

		if reason := holds.Held(step); reason != "" {
			h.logger.Debug("autohealing: held", "instance", step.Row.Name, "reason", reason)
			continue
		}

		if wait, waiting := h.correlating(step, now); waiting {
			h.logger.Debug("autohealing: waiting to see whether other instances fail too", "instance", step.Row.Name, "for", wait)
			continue
		}

		if until, settling := h.settling(step, now); settling {
			h.logger.Debug("autohealing: settling after a hold", "instance", step.Row.Name, "until", until)
			continue
		}

		verdict := !step.Unreachable && step.Row.State == db.InstanceCreated
		h.start(step.Row, func(ctx context.Context) {
			_ = h.replaceFor(ctx, step.Shape, step.Row, step.Cause, api.InternalRequestor("autoheal"), verdict)
		})
	}

	return nil
}

// activeRows copies the rows this daemon is replacing.
func (h *Autohealer) activeRows() map[int64]bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	active := make(map[int64]bool, len(h.active))
	for id := range h.active {
		active[id] = true
	}

	return active
}

// freshReachability reads the LXD cluster's members again before an instance is replaced
// because its member looks offline: the view every probe keeps can be seconds old, and a
// member back since must not lose its instances. When the members cannot be read, those
// steps wait for the next round.
func (h *Autohealer) freshReachability(steps []HealStep) []HealStep {
	lost := false
	for _, step := range steps {
		lost = lost || step.Unreachable
	}

	if !lost {
		return steps
	}

	view, err := h.fleet.lxd.RefreshCluster()
	kept := steps[:0]
	for _, step := range steps {
		if step.Unreachable && (err != nil || !shapeRules.Unreachable(step.Row.Location, shapeRules.ClusterMembers(view))) {
			continue
		}

		kept = append(kept, step)
	}

	return kept
}

// noteStart counts a replacement started for a shape toward health.replacement_limit.
func (h *Autohealer) noteStart(shapeID int64, window time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	kept := h.starts[shapeID][:0]
	for _, at := range h.starts[shapeID] {
		if now.Sub(at) < window {
			kept = append(kept, at)
		}
	}

	h.starts[shapeID] = append(kept, now)
}

// healCandidates reads the rows PlanHealing may pick among the shapes': the rest of a
// shape's instances (healthy, running, reachable) are never a step, and reading all of
// them every round was most of autohealing's cost at rest (issue 20).
func healCandidates(ctx context.Context, tx *sql.Tx, shapes []db.Shape, members []shapeRules.Member) ([]db.Instance, error) {
	var ids []int64
	for _, s := range healingShapes(shapes) {
		ids = append(ids, s.ID)
	}

	// shapeRules.Unreachable: outside a cluster nothing is; in one, a location that is no
	// online member's.
	var online []string
	if len(members) > 0 {
		online = []string{}
		for _, m := range members {
			if m.Online {
				online = append(online, m.Name)
			}
		}
	}

	return db.GetHealCandidates(ctx, tx, ids, online)
}

// start runs f for an old instance's row in the background, once at a time per row.
// The caller holds h.mu.
func (h *Autohealer) start(row db.Instance, f func(ctx context.Context)) {
	h.active[row.ID] = true
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		// Replacements run to the end through a shutdown, as launches and deletes do.
		f(context.Background())
		h.mu.Lock()
		delete(h.active, row.ID)
		h.mu.Unlock()
	}()
}

// replace launches a replacement for old and deletes old: the replacement first below the
// maximum, old first at it (so that LXD never holds more than the maximum). by is who
// asked: autohealing itself, or the operator whose drain or rebalance moves the instance.
func (h *Autohealer) replace(ctx context.Context, shape db.Shape, old db.Instance, cause string, by api.DeploymentRequestor) error {
	return h.replaceFor(ctx, shape, old, cause, by, false)
}

// replaceFor is replace; verdict says the replacement is for the instance's unhealthy
// verdict, which the reservation reads again: one that recovered since the round read it
// (the round's view is a moment old) is left alone.
func (h *Autohealer) replaceFor(ctx context.Context, shape db.Shape, old db.Instance, cause string, by api.DeploymentRequestor, verdict bool) error {
	r, err := h.reserveReplacement(ctx, old, cause, by, verdict)
	if errors.Is(err, errGiveUp) {
		h.fleet.countReplacement(old, metrics.ReplacementGaveUp)
		h.degrade(ctx, shape, old, maxReplaceFailures, cause)
		return err
	}

	if err != nil {
		// Mostly the budget: another replacement runs; the next round tries again.
		h.logger.Debug("autohealing: replacement not started", "instance", old.Name, "err", err)
		return err
	}

	if settings, ok := health.Parse(shape.Health); ok {
		h.noteStart(shape.ID, settings.ReplacementWindow)
	}

	name := r.launch.ref.Instance
	h.logger.Info("autohealing: replacing instance", "instance", old.Name, "replacement", name, "cause", cause, "delete_first", r.deleteFirst)
	h.fleet.replaced(ctx, by, old, name, cause)
	replacing := old
	replacing.State = db.InstanceReplacing
	if r.deleteFirst {
		err = h.removeOld(ctx, replacing, by)
		if err != nil {
			// The old instance is still there: its replacement must not be made beside it.
			h.fleet.abandonLaunch(ctx, r.launch, err)
			h.restoreOld(ctx, old)
			return err
		}
	}

	err = h.fleet.finishLaunch(ctx, r.launch)
	if err != nil {
		h.launchFailed(ctx, shape, old, r, err)
		return err
	}

	h.fleet.countReplacement(old, metrics.ReplacementOK)
	if !r.deleteFirst {
		// A failed delete leaves the old instance replacing: the next rounds finish it.
		_ = h.removeOld(ctx, replacing, by)
	}

	return nil
}

// replacement is a reserved replacement of an instance.
type replacement struct {
	launch *pendingLaunch

	// failures counts the shape's failed replacements in a row before this one.
	failures int

	// deleteFirst: there is no room beside the old instance in LXD (the shape is at its
	// maximum, counting instances still being deleted): the old one goes first.
	deleteFirst bool
}

// reserveReplacement takes the old instance out of the count (state replacing) and
// reserves its replacement in one transaction, within the shape's budget.
func (h *Autohealer) reserveReplacement(ctx context.Context, old db.Instance, cause string, by api.DeploymentRequestor, verdict bool) (*replacement, error) {
	ref := refs.Instance(old)
	ref.Instance = healedName(old.Name)
	r := &replacement{}
	var err error
	r.launch, err = h.fleet.reserveLaunch(ctx, ref, Change{
		By:       by,
		Why:      cause,
		replaces: old.Name,
		before: func(ctx context.Context, tx *sql.Tx, s *db.Shape) error {
			if s.StatusReason != "" {
				return lxdapi.StatusErrorf(http.StatusConflict, "shape %s is degraded: autohealing stopped", s.Name)
			}

			if verdict {
				fresh, err := db.GetInstance(ctx, tx, s.ID, old.Name)
				if err != nil {
					return err
				}

				if fresh.ID != old.ID || fresh.State != db.InstanceCreated || fresh.Health.Status != api.HealthUnhealthy {
					return lxdapi.StatusErrorf(http.StatusConflict, "instance %s is no longer unhealthy (%s): not replaced", old.Name, fresh.Health.Status)
				}
			}

			err := h.budget.take(ctx, tx, s)
			if err != nil {
				return err
			}

			// A replacement that never became healthy is a failed replacement.
			r.failures = s.ReplaceFailures
			if old.Health.Replacement {
				r.failures++
				if r.failures >= maxReplaceFailures {
					return errGiveUp
				}

				err = db.SetShapeReplaceFailures(ctx, tx, s.ID, r.failures, "")
				if err != nil {
					return err
				}
			}

			// An unreachable instance cannot be deleted while its member is offline: its
			// replacement is made beside it, and it goes when the member returns
			// (doc/placement.md).
			lost := shapeRules.Unreachable(old.Location, h.fleet.members())
			r.deleteFirst = old.State != db.InstanceMissing && !lost && rules.Room(s.ScalingMaximum, s.ScalingCurrent, s.Going) == 0
			err = db.SetInstanceState(ctx, tx, old.ID, old.State, db.InstanceReplacing, h.owner, time.Now())
			if err != nil {
				return err
			}

			// The old instance leaves the count here, so its replacement takes its room.
			if old.State != db.InstanceMissing {
				s.ScalingCurrent--
			}

			return nil
		},
		InTx: func(ctx context.Context, tx *sql.Tx, s *db.Shape, row int64) error {
			return db.MarkInstanceReplacement(ctx, tx, row)
		},
	})

	return r, err
}

// launchFailed records a replacement LXD did not make: the old instance counts again
// (unless it went first), and the failure counts toward giving up.
func (h *Autohealer) launchFailed(ctx context.Context, shape db.Shape, old db.Instance, r *replacement, err error) {
	h.logger.Warn("autohealing: replacement launch failed", "instance", old.Name, "replacement", r.launch.ref.Instance, "delete_first", r.deleteFirst, "err", err)
	h.fleet.countReplacement(old, metrics.ReplacementFailed)
	_ = h.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if !r.deleteFirst {
			err := db.SetInstanceState(ctx, tx, old.ID, db.InstanceReplacing, old.State, h.owner, time.Now())
			if err != nil {
				return err
			}
		}

		return db.SetShapeReplaceFailures(ctx, tx, shape.ID, r.failures+1, "")
	})
	if r.failures+1 >= maxReplaceFailures {
		h.degrade(ctx, shape, old, r.failures+1, fmt.Sprintf("the last replacement could not be launched: %v", err))
	}
}

// removeOld deletes a replaced instance through the fleet; it no longer counts toward the
// size, and against the maximum only until LXD has deleted it.
func (h *Autohealer) removeOld(ctx context.Context, old db.Instance, by api.DeploymentRequestor) error {
	ref := refs.Instance(old)
	p, err := h.fleet.reserveDelete(ctx, ref, Change{By: by, Why: "replaced"})
	if err == nil {
		err = h.fleet.finishDelete(ctx, p)
	}

	if err != nil {
		h.logger.Warn("autohealing: delete replaced instance", "instance", old.Name, "err", err)
	}

	return err
}

// restoreOld puts an instance whose replacement was given up back into the count; the
// next round tries again.
func (h *Autohealer) restoreOld(ctx context.Context, old db.Instance) {
	err := h.db.Transaction(context.WithoutCancel(ctx), func(ctx context.Context, tx *sql.Tx) error {
		return db.SetInstanceState(ctx, tx, old.ID, db.InstanceReplacing, old.State, h.owner, time.Now())
	})
	if err != nil {
		h.logger.Warn("autohealing: restore instance after a failed replacement", "instance", old.Name, "err", err)
	}
}

// degrade stops autohealing of a shape and says why.
func (h *Autohealer) degrade(ctx context.Context, shape db.Shape, last db.Instance, failures int, cause string) {
	reason := fmt.Sprintf("%d replacements in a row did not become healthy (last: %s): autohealing stopped; fix the shape and update it to resume", failures, cause)
	err := h.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		return db.SetShapeReplaceFailures(ctx, tx, shape.ID, failures, reason)
	})
	if err != nil {
		h.logger.Warn("autohealing: mark shape degraded", "shape", shape.Name, "err", err)
		return
	}

	h.logger.Warn("autohealing: shape degraded", "shape", shape.Name, "reason", reason)
	h.fleet.reporter.Send(api.InternalRequestor("autoheal"), shape.DeploymentID, reporter.ShapeDegraded.Event(refs.ShapeRef{DeploymentRef: refs.Instance(last).DeploymentRef, Shape: shape.Name}, nil))
	h.fleet.reporter.Notify(ctx, shape.DeploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(reporter.ShapeDegraded), Shape: shape.Name, Instance: last.Name, Reason: reason})
}

// replaced reports a replacement, with its cause, on /1.0/events and to the governor. It is
// the one place replacements are announced, so that an activity log can take them here.
func (f *Fleet) replaced(ctx context.Context, by api.DeploymentRequestor, old db.Instance, replacement string, cause string) {
	f.reporter.Send(by, old.DeploymentID, reporter.InstanceReplaced.Event(refs.Instance(old), map[string]any{"cause": cause, "replacement": replacement}))
	f.reporter.Notify(ctx, old.DeploymentID, api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: string(reporter.InstanceReplaced), Shape: old.Shape, Instance: old.Name,
		Reason: fmt.Sprintf("%s: replaced by %s", cause, replacement)})
}

// healedSuffix is what healedName appends, so that a replacement of a replacement does not
// grow the name again.
var healedSuffix = regexp.MustCompile(`-r[0-9a-f]{6}$`)

// healedName names autohealing's replacement of an instance after it (web1 -> web1-r3fa2c1),
// so a governor that named its instances still recognises them; a rollout's replacements
// are named after their shape and revision instead (replacementName).
func healedName(old string) string {
	base := healedSuffix.ReplaceAllString(old, "")
	if len(base) > 55 {
		base = base[:55]
	}

	b := make([]byte, 3)
	_, _ = rand.Read(b)
	return base + "-r" + hex.EncodeToString(b)
}
