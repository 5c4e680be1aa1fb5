package health

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/db/dbtest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestNextNoVerdictKeepsTheLastVerdict: a check that could not run moves neither the
// status nor the run of results; it only says why it did not run, until a check runs.
func TestNextNoVerdictKeepsTheLastVerdict(t *testing.T) {
	s := Settings{HealthyThreshold: 1, UnhealthyThreshold: 2}
	checked := time.Now().Add(-time.Minute)
	healthy := db.InstanceHealth{Status: api.HealthHealthy, Streak: 3, Output: "ok", CheckedAt: &checked}
	h := healthy
	for range 10 {
		h = Next(h, s, time.Time{}, Result{At: time.Now(), ExitCode: -1, NoVerdict: true, Output: "check did not run: LXD did not answer"})
	}

	if h.Status != api.HealthHealthy || h.Streak != 3 || h.Output != "ok" || h.CheckedAt != &checked || h.Stale != "check did not run: LXD did not answer" {
		t.Fatalf("after checks that could not run: %+v, want the last verdict kept and marked stale", h)
	}

	h = Next(h, s, time.Time{}, Result{At: time.Now(), Passed: true, Output: "ok again"})
	if h.Stale != "" || h.Streak != 4 || h.Output != "ok again" {
		t.Fatalf("a check that ran ends the staleness: %+v", h)
	}

	h = Next(h, s, time.Time{}, Result{At: time.Now(), ExitCode: 127, CannotStart: true})
	if !h.CannotStart || h.Streak != -1 {
		t.Fatalf("a check that could not start is a failed check that says so: %+v", h)
	}
}

// TestClassifyDial: nothing listening is the instance's (and, everywhere, the check's);
// the daemon's own shortage of file descriptors is no verdict.
func TestClassifyDial(t *testing.T) {
	refused := classifyDial(Result{ExitCode: -1}, fmt.Errorf("dial tcp: %w", syscall.ECONNREFUSED))
	if !refused.CannotStart || refused.NoVerdict {
		t.Errorf("connection refused: %+v", refused)
	}

	own := classifyDial(Result{ExitCode: -1}, fmt.Errorf("dial tcp: socket: %w", syscall.EMFILE))
	if !own.NoVerdict || own.CannotStart {
		t.Errorf("too many open files: %+v", own)
	}

	timeout := classifyDial(Result{ExitCode: -1}, context.DeadlineExceeded)
	if timeout.NoVerdict || timeout.CannotStart {
		t.Errorf("a timeout is a failed check: %+v", timeout)
	}
}

// answeringLXD answers GET /1.0 and an instance's state as told, or not at all.
type answeringLXD struct {
	down   bool
	status string
}

func (f answeringLXD) DoHTTP(req *http.Request) (*http.Response, error) {
	if f.down {
		return nil, fmt.Errorf("dial unix /var/lib/lxd/unix.socket: %w", syscall.ECONNREFUSED)
	}

	w := httptest.NewRecorder()
	switch {
	case req.URL.Path == "/1.0":
		_, _ = io.WriteString(w, `{"type": "sync", "status_code": 200, "metadata": {}}`)
	case strings.HasSuffix(req.URL.Path, "/state"):
		_, _ = fmt.Fprintf(w, `{"type": "sync", "status_code": 200, "metadata": {"status": %q}}`, f.status)
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"type": "error", "error_code": 404, "error": "not found"}`)
	}

	return w.Result(), nil
}

// TestExecFailed walks what an exec check without an exit code says: only what LXD says
// of the instance is a verdict.
func TestExecFailed(t *testing.T) {
	c := &Checker{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	tg := target{row: db.Instance{Name: "web1", Project: "default"}, settings: Settings{Timeout: 2 * time.Second}}
	running := fmt.Errorf("no answer within the check's timeout: %w: %w", backend.ErrCommandRunning, context.DeadlineExceeded)
	cases := []struct {
		name        string
		lxd         answeringLXD
		err         error
		verdict     bool
		cannotStart bool
	}{
		{"LXD down", answeringLXD{down: true}, errors.New("EOF"), false, false},
		{"LXD frozen while the command ran", answeringLXD{down: true}, running, false, false},
		{"the command hung, LXD answers", answeringLXD{status: "Running"}, running, true, false},
		{"LXD did not start the command in time", answeringLXD{status: "Running"}, context.DeadlineExceeded, false, false},
		{"exec refused, instance running", answeringLXD{status: "Running"}, errors.New("Instance is busy"), false, false},
		{"exec refused, instance stopped", answeringLXD{status: "Stopped"}, errors.New("Instance is not running"), true, false},
		{"LXD could not start the command", answeringLXD{status: "Running"}, fmt.Errorf("%w: fork/exec: no such file", backend.ErrExecFailed), true, true},
	}

	for _, tc := range cases {
		r := c.execFailed(context.Background(), tc.lxd, tg, tc.err)
		if r.NoVerdict == tc.verdict || r.CannotStart != tc.cannotStart || r.Passed {
			t.Errorf("%s: %+v, want verdict %v, cannot start %v", tc.name, r, tc.verdict, tc.cannotStart)
		}

		if !tc.verdict && !strings.HasPrefix(r.Output, "check did not run: ") {
			t.Errorf("%s: no verdict must say why: %q", tc.name, r.Output)
		}
	}
}

// TestExpiryAfterOutage: a ttl instance that did not report while LXD was unavailable (or
// before the checker had run a whole ttl) is not failed; past a ttl without either, it is.
func TestExpiryAfterOutage(t *testing.T) {
	c := &Checker{}
	now := time.Now()
	tg := target{settings: Settings{Kind: api.HealthKindTTL, TTL: 10 * time.Second}}
	c.outage.saw(now.Add(-5 * time.Second))
	if r := c.expiry(tg, now); !r.NoVerdict || !r.Expiry {
		t.Errorf("an expiry 5 s after an outage, ttl 10 s: %+v, want no verdict", r)
	}

	if r := c.expiry(tg, now.Add(6*time.Second)); r.NoVerdict || !r.Expiry || r.Passed {
		t.Errorf("an expiry 11 s after an outage, ttl 10 s: %+v, want a failed check", r)
	}
}

// TestBrokenCheck: a check that cannot start on any instance marks the shape's check
// broken (recorded with a reason that names the fix); one instance where it starts makes
// it ok, which stays until the health object changes.
func TestBrokenCheck(t *testing.T) {
	cluster := dbtest.Open(t)
	ctx := context.Background()
	checks := &api.DeploymentShapeHealth{Command: []string{"no-such-command"}, Grace: "0s", Replace: true}
	rows, settings := checkedFleet(t, cluster, checks, 3)
	shapeID := rows[0].ShapeID
	sc := newShapeCheck(shapeID, "web", checks, "")
	var targets []target
	for _, row := range rows {
		targets = append(targets, target{row: row, settings: settings, shape: sc})
	}

	c := &Checker{DB: cluster, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), checks: checkStates{}}
	c.checks.listed(targets)
	result := func(i int, r Result) {
		r.At = time.Now()
		c.pending = append(c.pending, pendingResult{target: targets[i], result: r})
	}

	state := func() (string, string) {
		var s *db.Shape
		err := cluster.Read(ctx, func(ctx context.Context, tx *sql.Tx) error {
			var err error
			s, err = db.GetShape(ctx, tx, rows[0].DeploymentID, "web")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}

		return s.HealthCheck, s.HealthCheckReason
	}

	notFound := Result{ExitCode: 127, CannotStart: true}
	result(0, notFound)
	result(1, notFound)
	result(1, Result{ExitCode: -1, NoVerdict: true}) // says nothing
	c.flush(ctx)
	if got, _ := state(); got != "" {
		t.Fatalf("two of three instances checked: the check is %q, want unknown", got)
	}

	result(2, notFound)
	c.flush(ctx)
	got, reason := state()
	if got != api.HealthCheckBroken || !strings.Contains(reason, "exit code 127") || !strings.Contains(reason, "fix health.command") || !strings.Contains(reason, "3 instances") {
		t.Fatalf("every instance's check could not start: %q (%q), want broken with the fix", got, reason)
	}

	result(1, Result{ExitCode: 1}) // it started: the instance's own failure
	c.flush(ctx)
	if got, _ := state(); got != api.HealthCheckOK {
		t.Fatalf("the check started on one instance: %q, want ok", got)
	}

	result(1, notFound)
	c.flush(ctx)
	if got, _ := state(); got != api.HealthCheckOK {
		t.Fatalf("ok stays until the check changes: %q", got)
	}

	// Another check is another story: the shape's update forgets the state.
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		s, err := db.GetShape(ctx, tx, rows[0].DeploymentID, "web")
		if err != nil {
			return err
		}

		put := s.Writable()
		put.Health = &api.DeploymentShapeHealth{Command: []string{"true"}, Grace: "0s", Replace: true}
		return db.UpdateShape(ctx, tx, s.ID, put)
	})
	if err != nil {
		t.Fatal(err)
	}

	if got, _ := state(); got != "" {
		t.Fatalf("after a new health object: %q, want unknown", got)
	}

	// A result of the old check, recorded late, leaves the new check's state alone.
	result(0, notFound)
	result(1, notFound)
	result(2, notFound)
	c.flush(ctx)
	if got, _ := state(); got != "" {
		t.Fatalf("the old check's results marked the new one %q", got)
	}
}

// TestBrokenCheckIgnoresGrace: a service still starting refuses connections; that is not
// a broken check.
func TestBrokenCheckIgnoresGrace(t *testing.T) {
	checks := &api.DeploymentShapeHealth{TCP: &api.DeploymentShapeHealthTCP{Port: 80}, Grace: "1m"}
	settings, _ := Parse(checks)
	sc := newShapeCheck(1, "web", checks, "")
	tg := target{row: db.Instance{ID: 7, StateChangedAt: time.Now()}, settings: settings, shape: sc}
	cs := checkStates{}
	cs.listed([]target{tg})
	writes := cs.observe([]pendingResult{{target: tg, result: Result{At: time.Now(), ExitCode: -1, CannotStart: true}}})
	if len(writes) != 0 {
		t.Fatalf("a refusal in the grace period decided %+v", writes)
	}

	tg.row.StateChangedAt = time.Now().Add(-time.Hour)
	writes = cs.observe([]pendingResult{{target: tg, result: Result{At: time.Now(), ExitCode: -1, CannotStart: true}}})
	if len(writes) != 1 || writes[0].state != api.HealthCheckBroken || !strings.Contains(writes[0].reason, "port 80") {
		t.Fatalf("past the grace period: %+v, want broken naming the port", writes)
	}
}
