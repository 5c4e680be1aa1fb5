package test

import (
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// TestTorture is the randomized invariant suite (`make torture`): a seeded, time-bounded run
// of governor, template, rollout, health, hook, warm-pool, failed-start and crash operations
// against the real daemon, a private LXD of its own and real dqlite, while a sampler reads
// LXD's own instance list every 50 ms. TORTURE_TIME bounds the run (default 60s, what `make
// test` runs), TORTURE_SEED replays a run's sequence of operations, TORTURE_OPS chooses the
// operations (see torture_known_test.go).
func TestTorture(t *testing.T) {
	t.Parallel()
	cfg := tortureConfigFromEnv(t)
	t.Logf("torture: seed %d (TORTURE_SEED=%d replays it), %s, operations %s", cfg.seed, cfg.seed, cfg.duration, cfg.opsName)
	tt := newTorture(t, cfg)

	tt.watchHealth()
	stopSampling := sampleEvery(t, sampleInterval, tt.sampleLXD)
	tt.run()
	tt.settle()
	stopSampling()
	tt.checkRevisions()
	tt.stopWatching()
	tt.reportPlatform()
	tt.report()
}

// tortureConfig is what a run is made of.
type tortureConfig struct {
	seed     int64
	duration time.Duration
	ops      []tortureOp
	opsSpec  string // TORTURE_OPS as given ("safe" when unset)
	opsName  string // what it means
}

func tortureConfigFromEnv(t *testing.T) tortureConfig {
	cfg := tortureConfig{seed: time.Now().UnixNano(), duration: 60 * time.Second}
	if s := os.Getenv("TORTURE_SEED"); s != "" {
		seed, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("TORTURE_SEED=%q: give the integer seed a failed run printed", s)
		}

		cfg.seed = seed
	}

	if s := os.Getenv("TORTURE_TIME"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("TORTURE_TIME=%q: give a duration such as 60s or 10m", s)
		}

		cfg.duration = d
	}

	cfg.opsSpec = os.Getenv("TORTURE_OPS")
	if cfg.opsSpec == "" {
		cfg.opsSpec = "safe"
	}

	ops, name, err := selectTortureOps(cfg.opsSpec)
	if err != nil {
		t.Fatal(err)
	}

	cfg.ops, cfg.opsName = ops, name
	return cfg
}

// tortureShape is one shape of the run: its bounds never change, so scaling_maximum is a
// fixed line for the sampler.
type tortureShape struct {
	min, max int
}

// torture holds one run: the daemon, connections, and what was seen.
type torture struct {
	t     *testing.T
	cfg   tortureConfig
	rng   *rand.Rand
	start time.Time

	lxd        *lxdtest.LXD
	lxdConn    lxd.InstanceServer // the operations' connection to LXD
	sampleConn lxd.InstanceServer // the sampler's own
	d          *daemon
	daemonArgs []string
	admin      *client.Server // unix socket: shape changes, rollouts, reads
	gov        *client.Server // HTTPS with the deployment's admin key: launches and deletes
	watcher    *client.Server // unix socket: the sampler's reads

	shapes map[string]tortureShape
	seq    int // makes instance names and template markers unique

	mu             sync.Mutex
	log            []string
	violations     map[string][]string // distinct details by invariant, in order seen
	violationCount map[string]int      // every time seen, by invariant
	opCounts       map[string]int
	ops            int
	samples        atomic.Int64
	rollChecks     atomic.Int64 // samples with fewer than rollSize of roll running
	rollSurges     atomic.Int64 // samples with more than rollSize of roll: a replacement in flight
	lxdFailures    atomic.Int64
	mostSeen       map[string]int // the most instances LXD held per shape
	markers        []revisionMarker
	rollHistory    rollHistory                  // roll's running count in recent samples
	pendingHook    map[string]*client.Operation // deletes waiting in terminating:wait
	sick           map[string]bool              // heal instances made unhealthy
	platform       *platform                    // faults of LXD itself (torture_platform_test.go)
}

// revisionMarker is an accepted change whose value a revision must hold.
type revisionMarker struct {
	shape, field, value, how string
}

func (tt *torture) elapsed() string {
	return fmt.Sprintf("%8.3fs", time.Since(tt.start).Seconds())
}

// logf adds a line to the operation log.
func (tt *torture) logf(format string, args ...any) {
	line := tt.elapsed() + " " + fmt.Sprintf(format, args...)
	tt.mu.Lock()
	tt.log = append(tt.log, line)
	tt.mu.Unlock()
}

// violate records a broken invariant; the run goes on so that one run shows every kind.
// The same detail seen again (a sample of the same excess 50 ms later) is counted, not
// repeated.
func (tt *torture) violate(invariant string, format string, args ...any) {
	detail := fmt.Sprintf(format, args...)
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.violationCount[invariant]++
	for _, seen := range tt.violations[invariant] {
		if strings.HasSuffix(seen, " "+detail) {
			return
		}
	}

	line := tt.elapsed() + " " + detail
	tt.violations[invariant] = append(tt.violations[invariant], line)
	if len(tt.violations[invariant]) <= 20 {
		tt.log = append(tt.log, tt.elapsed()+" VIOLATION "+invariant+": "+detail)
	}
}

// nextName returns a fresh instance name in shape.
func (tt *torture) nextName(shape string) string {
	tt.seq++
	return fmt.Sprintf("%s-g%d", shape, tt.seq)
}

// report prints the counts and fails with the seed, the violations and the operation log.
func (tt *torture) report() {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	var kinds []string
	for op, n := range tt.opCounts {
		kinds = append(kinds, fmt.Sprintf("%s=%d", op, n))
	}

	sort.Strings(kinds)
	var most []string
	for shape, n := range tt.mostSeen {
		most = append(most, fmt.Sprintf("%s %d/%d", shape, n, tt.shapes[shape].max))
	}

	sort.Strings(most)
	tt.t.Logf("torture: seed %d: %d operations, %d LXD samples checked (%d with a roll replacement in flight, %d with fewer than %d of roll running held to its rollouts, %d failed LXD reads), %d accepted changes checked for their revision\n  operations: %s\n  most instances LXD held (of scaling_maximum): %s",
		tt.cfg.seed, tt.ops, tt.samples.Load(), tt.rollSurges.Load(), tt.rollChecks.Load(), rollSize, tt.lxdFailures.Load(), len(tt.markers), strings.Join(kinds, " "), strings.Join(most, ", "))
	if path := os.Getenv("TORTURE_LOG"); path != "" {
		_ = os.WriteFile(path, []byte(strings.Join(tt.log, "\n")+"\n"), 0o600)
		tt.t.Logf("operation log written to %s", path)
	}

	if len(tt.violations) == 0 {
		return
	}

	var b strings.Builder
	fmt.Fprintf(&b, "torture: seed %d broke invariants; TORTURE_SEED=%d TORTURE_OPS=%s replays its operations\n", tt.cfg.seed, tt.cfg.seed, tt.cfg.opsSpec)
	var invariants []string
	for invariant := range tt.violations {
		invariants = append(invariants, invariant)
	}

	sort.Strings(invariants)
	for _, invariant := range invariants {
		seen := tt.violations[invariant]
		fmt.Fprintf(&b, "== %s: %d times, %d distinct, first ones:\n", invariant, tt.violationCount[invariant], len(seen))
		for _, detail := range seen[:min(len(seen), 8)] {
			fmt.Fprintf(&b, "   %s\n", detail)
		}
	}

	fmt.Fprintf(&b, "== operation log (%d lines):\n%s\n", len(tt.log), strings.Join(tt.log, "\n"))
	tt.t.Error(b.String())
	if path := os.Getenv("TORTURE_DAEMON_LOG"); path != "" {
		_ = os.WriteFile(path, []byte(tt.d.Log()), 0o600)
		tt.t.Logf("daemon log written to %s", path)
	}
}
