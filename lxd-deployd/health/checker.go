package health

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/metrics"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Change is a verdict that moved: an instance became healthy or unhealthy.
type Change struct {
	Instance db.Instance
	Before   db.InstanceHealth
	After    db.InstanceHealth
}

// Checker runs the checks of every instance of every shape with a health object. One
// daemon of a cluster checks (the caller runs it under a lease), so each instance is
// checked by one member; checks are spread over each interval with jitter and at most
// Concurrency run at once, so a thousand instances do not hit LXD in the same second.
// When they cannot keep up, every instance is still checked in turn (the longest overdue
// first), and the metrics and a warning say so.
type Checker struct {
	DB          *db.Cluster
	LXD         *backend.LXD
	Logger      *slog.Logger
	Concurrency int

	// Metrics hears of every check and of the instances overdue (nil: none kept).
	Metrics *metrics.Metrics

	// OnChange is told of verdicts that moved, after they are recorded.
	OnChange func(ctx context.Context, c Change)

	// Listings is where http and tcp checks find their instances' addresses: the observed
	// snapshot of LXD's instances, shared with the daemon's other readers.
	Listings Listings

	// outage is when LXD was last seen unavailable, or the checker began (outage.go).
	outage outage

	// checks follows whether each shape's check could start (check_state.go); the Run
	// goroutine's alone.
	checks checkStates

	// mu guards the schedule, which the workers take checks from, and what the checks
	// achieved (achieved.go).
	mu       sync.Mutex
	sched    *schedule
	achieved achieved

	// How many targets were last listed, the ticks since, and the verdicts recorded since
	// (the Run goroutine's alone).
	listedCount int
	sinceList   int
	recorded    map[int64]db.InstanceHealth

	pendingMu sync.Mutex
	pending   []pendingResult

	// The markers of exec checks that timed out since the last tick (killTimedOut).
	killMu sync.Mutex
	kills  []string
}

// Run checks until ctx ends: Concurrency workers each take the next due check as soon
// as their last one ends, and every tick records the results since the last one and
// lists the targets again (less often when there are many).
func (c *Checker) Run(ctx context.Context, tick time.Duration) {
	c.mu.Lock()
	c.sched = newSchedule()
	c.mu.Unlock()
	c.recorded = map[int64]db.InstanceHealth{}
	c.checks = checkStates{}
	c.outage.saw(time.Now())
	defer c.killTimedOut() // after the workers ended (deferred calls run last first)
	var wg sync.WaitGroup
	defer wg.Wait()
	for range max(c.Concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.work(ctx, tick)
		}()
	}

	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}

		if c.LXD != nil && !c.LXD.Status().Online {
			c.sawOutage()
		}

		c.killTimedOut()
		c.flush(ctx)
		err := c.refresh(ctx)
		if err != nil && ctx.Err() == nil {
			c.Logger.Debug("health round", "err", err)
		}
	}
}

// target is one instance to check and how.
type target struct {
	row      db.Instance
	settings Settings

	// shape is the shape's check, shared by its targets (check_state.go).
	shape *shapeCheck
}

// work runs one check after another, the longest overdue first, until ctx ends. A slot
// is taken again as soon as its check ends: when it waited for the next tick, 16 slots
// ran at most 16 checks a second however fast LXD answered (17 a second where 100 were
// asked, in BenchmarkExecCheckCapacity).
func (c *Checker) work(ctx context.Context, tick time.Duration) {
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		var t target
		wait, ok := tick, false
		if c.LXD == nil || c.LXD.Status().Online {
			c.mu.Lock()
			t, wait, ok = c.sched.take(time.Now())
			c.mu.Unlock()
		}

		if !ok {
			if wait <= 0 || wait > tick {
				wait = tick
			}

			timer.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-timer.C:
			}

			continue
		}

		c.check(ctx, t)
		c.mu.Lock()
		c.sched.done(t, time.Now())
		c.achieved.count(t.settings.Kind)
		c.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
	}
}

// refresh lists the targets again every tick while there are few and less often when
// there are many (every 5 ticks at 1,000: reading every instance's row each second was
// the most the checker cost the daemon); meanwhile the verdicts recorded since are kept
// in the rows listed, as the checks use them. Then it says how far the checks fall
// behind (overdue).
func (c *Checker) refresh(ctx context.Context) error {
	if c.LXD != nil && !c.LXD.Status().Online {
		return nil
	}

	c.sinceList++
	var listed []target
	relist := c.sinceList >= 1+c.listedCount/250
	if relist {
		var err error
		listed, err = c.targets(ctx)
		if err != nil {
			return err
		}

		c.sinceList, c.listedCount = 0, len(listed)
	}

	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if relist {
		if c.checks == nil {
			c.checks = checkStates{}
		}

		c.checks.listed(listed)
		c.sched.set(listed, now)
		c.recorded = map[int64]db.InstanceHealth{}
	} else {
		for i, t := range c.sched.targets {
			h, ok := c.recorded[t.row.ID]
			if ok {
				c.sched.targets[i].row.Health = h
			}
		}
	}

	c.overdue(now)
	return nil
}

// targets lists the created instances of shapes that have health checks.
func (c *Checker) targets(ctx context.Context) ([]target, error) {
	var targets []target
	err := c.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		shapes, err := db.GetShapes(ctx, tx, db.ShapeFilter{})
		if err != nil {
			return err
		}

		settings := map[int64]Settings{}
		checks := map[int64]*shapeCheck{}
		for _, s := range shapes {
			parsed, ok := Parse(s.Health)
			if ok {
				settings[s.ID] = parsed
				checks[s.ID] = newShapeCheck(s.ID, s.Name, s.Health, s.HealthCheck)
			}
		}

		if len(settings) == 0 {
			return nil
		}

		rows, err := db.GetInstances(ctx, tx, db.InstanceFilter{State: db.InstanceCreated})
		if err != nil {
			return err
		}

		for _, row := range rows {
			s, ok := settings[row.ShapeID]
			if ok {
				targets = append(targets, target{row: row, settings: s, shape: checks[row.ShapeID]})
			}
		}

		return nil
	})

	return targets, err
}

// check runs one instance's check and records the verdict.
func (c *Checker) check(ctx context.Context, t target) {
	start := time.Now()
	var result Result
	switch t.settings.Kind {
	case api.HealthKindTTL:
		// The instance reports itself; only a missed report is the daemon's to record.
		last := t.row.Health.CheckedAt
		if last != nil && time.Since(*last) < t.settings.TTL {
			return
		}

		result = c.expiry(t, time.Now())
	case api.HealthKindHTTP, api.HealthKindTCP:
		result = c.probe(ctx, t)
	default:
		var ok bool
		result, ok = c.exec(ctx, t)
		if !ok {
			return
		}
	}

	if ctx.Err() != nil {
		return
	}

	c.Metrics.HealthCheck(t.settings.Kind, resultLabel(result), time.Since(start))
	c.pendingMu.Lock()
	c.pending = append(c.pending, pendingResult{target: t, result: result})
	c.pendingMu.Unlock()
}

// resultLabel is a result as the health_checks_total metric counts it.
func resultLabel(r Result) string {
	switch {
	case r.Passed:
		return "passed"
	case r.NoVerdict, r.ExitCode < 0 && !r.Expiry:
		return "error"
	default:
		return "failed"
	}
}

// maxPending bounds the results kept while the database refuses them (a member that lost
// its quorum): past it, a failed batch is dropped, and its instances are checked again.
const maxPending = 10000

// pendingResult is a check's result waiting for the next flush.
type pendingResult struct {
	target target
	result Result
}

// flush records the results of the checks that ended since the last tick in one
// transaction: a dqlite commit per check was most of what an exec check cost the daemon,
// and a verdict waits at most one tick longer.
func (c *Checker) flush(ctx context.Context) {
	c.pendingMu.Lock()
	results := c.pending
	c.pending = nil
	c.pendingMu.Unlock()
	if len(results) == 0 {
		return
	}

	var changes []*Change
	var applied []*update
	checkWrites := c.checks.observe(results)
	err := c.DB.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		// Every read first: the write lock is taken at the first write and held until the
		// commit, and other writers (launches) find the database busy meanwhile.
		updates, err := prepareAll(ctx, tx, results)
		if err != nil {
			return err
		}

		applied = updates
		changes, err = applyAll(ctx, tx, updates)
		if err != nil {
			return err
		}

		for _, w := range checkWrites {
			err = db.SetShapeHealthCheck(ctx, tx, w.check.id, w.check.health, w.state, w.reason)
			if err != nil {
				return err
			}
		}

		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return
		}

		// The results wait for the next tick instead of being lost: a batch dropped on a
		// busy database left its instances without a fresh verdict for two intervals
		// (the 5 of 200 instances of the first 200-instance bench).
		c.Logger.Warn("record health: kept for the next tick", "results", len(results), "err", err)
		c.pendingMu.Lock()
		if len(c.pending) < maxPending {
			c.pending = append(results, c.pending...)
		}

		c.pendingMu.Unlock()
		return
	}

	for _, w := range checkWrites {
		w.check.state = w.state
		if w.state == api.HealthCheckBroken {
			c.Logger.Warn("health check broken: it cannot start on any instance", "shape", w.check.name, "reason", w.reason)
		} else {
			c.Logger.Info("health check state", "shape", w.check.name, "state", w.state)
		}
	}

	if c.recorded != nil {
		for _, u := range applied {
			c.recorded[u.row.ID] = u.next
		}
	}

	for _, change := range changes {
		c.Notify(ctx, change)
	}
}

// exec runs an exec check; ok is false when there is no verdict to record (LXD is down,
// or the daemon stops).
func (c *Checker) exec(ctx context.Context, t target) (Result, bool) {
	result := Result{At: time.Now()}
	client, err := c.LXD.ChecksClient()
	if err != nil {
		c.sawOutage()
		return result, false // LXD is down: no verdict on the instance
	}

	// A check's output is recorded (four more requests to LXD, and files LXD writes) on an
	// instance's first check and after a failure; a passing check after a pass keeps the
	// output recorded last. Most checks of a healthy fleet are then one exec and one wait.
	record := t.row.Health.CheckedAt == nil || t.row.Health.ExitCode != 0
	marker := newMarker()
	checkCtx, cancel := context.WithTimeout(ctx, t.settings.Timeout)
	out, err := backend.ExecCheck(checkCtx, client, t.row.Project, t.row.Name, t.settings.Command, map[string]string{backend.CheckMarkerEnv: marker}, record, OutputLimit)
	timedOut := backend.Expired(checkCtx)
	cancel()
	if timedOut {
		// LXD cannot cancel an exec without websockets: the run is killed from the host,
		// at the next tick, in one sweep with the others that timed out meanwhile.
		c.killMu.Lock()
		c.kills = append(c.kills, marker)
		c.killMu.Unlock()
		c.Logger.Debug("health check timed out", "instance", t.row.Name)
	}

	if ctx.Err() != nil {
		return result, false
	}

	switch {
	case err != nil:
		result = c.execFailed(ctx, client, t, err)
	case out.ExitCode != 0 && !record:
		result.ExitCode = out.ExitCode
		result.CannotStart = cannotStart(out.ExitCode)
		result.Output = fmt.Sprintf("exit status %d (output not recorded: the next check records it)", out.ExitCode)
	case out.ExitCode != 0:
		result.ExitCode = out.ExitCode
		result.CannotStart = cannotStart(out.ExitCode)
		result.Output = truncate(fmt.Sprintf("exit status %d: %s", out.ExitCode, out.Output))
	case !record:
		result.Passed = true
		result.Output = t.row.Health.Output
	default:
		result.Passed = true
		result.Output = out.Output
	}

	return result, true
}

// answerLimit is how long LXD has to answer GET /1.0 after a check failed without a word
// from the command: longer, and LXD is too slow to judge an instance by.
const answerLimit = time.Second

// execFailed decides what an exec check that got no exit code says. Only what LXD said of
// the instance itself is a verdict: the command ran past its timeout while LXD answers
// at once, LXD could not start the command, or the instance is not running. LXD not
// answering, slow, restarting or refusing the exec of a running instance is no verdict:
// the instance keeps the last one (doc/health.md#verdicts-and-holds).
func (c *Checker) execFailed(ctx context.Context, client backend.DoHTTPer, t target, err error) Result {
	result := Result{At: time.Now(), ExitCode: -1}
	noVerdict := func(why string) Result {
		c.sawOutage()
		result.NoVerdict = true
		result.Output = truncate("check did not run: " + why)
		return result
	}

	answered := backend.Answers(ctx, client, answerLimit)
	if answered != nil {
		return noVerdict(answered.Error())
	}

	switch {
	case errors.Is(err, backend.ErrCommandRunning):
		result.Output = truncate(fmt.Sprintf("no answer within the check's timeout (%s): the command was still running and was killed", t.settings.Timeout))
		return result
	case errors.Is(err, context.DeadlineExceeded) || backend.Expired(ctx):
		return noVerdict(fmt.Sprintf("LXD did not start the command within the check's timeout (%s)", t.settings.Timeout))
	}

	stateCtx, cancel := context.WithTimeout(ctx, answerLimit)
	status, stateErr := backend.InstanceStatus(stateCtx, client, t.row.Project, t.row.Name)
	cancel()
	switch {
	case stateErr != nil:
		return noVerdict(fmt.Sprintf("%v (and LXD's state of the instance could not be read: %v)", err, stateErr))
	case status != "Running":
		result.Output = truncate(fmt.Sprintf("the instance is %s in LXD: %v", status, err))
		return result
	case errors.Is(err, backend.ErrExecFailed):
		result.CannotStart = true
		result.Output = truncate(fmt.Sprintf("the command could not be started: %v", err))
		return result
	}

	return noVerdict(err.Error())
}

// killTimedOut kills the processes of the exec checks that timed out since the last tick.
func (c *Checker) killTimedOut() {
	c.killMu.Lock()
	markers := c.kills
	c.kills = nil
	c.killMu.Unlock()
	if len(markers) > 0 {
		killed := backend.KillChecks(markers)
		c.Logger.Debug("health checks timed out: killed", "checks", len(markers), "processes", killed)
	}
}

// newMarker is a value unique to one check run (see backend.KillCheck).
func newMarker() string {
	var b [8]byte
	_, _ = crand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func truncate(s string) string {
	if len(s) > OutputLimit {
		return s[:OutputLimit]
	}

	return s
}
