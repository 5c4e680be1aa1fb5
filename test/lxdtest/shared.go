package lxdtest

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	lxd "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"
)

// sharedPoolEnv sets how many shared daemons [Shared] may run at once (default
// [DefaultSharedPool]).
const sharedPoolEnv = "LXDTEST_SHARED_POOL"

// DefaultSharedPool is how many shared daemons [Shared] runs at most when
// LXDTEST_SHARED_POOL does not say: enough for a few parallel tests on a
// 2-core machine, each with an LXD to itself.
const DefaultSharedPool = 3

var shared struct {
	mu      sync.Mutex
	freed   *sync.Cond      // signalled when a daemon returns to free
	all     []*LXD          // every daemon started, for StopShared
	free    []*LXD          // started and leased to no test
	leases  map[string]*LXD // by top-level test name
	err     error           // first start failure, repeated to every later caller
	stopped bool
}

func init() {
	shared.freed = sync.NewCond(&shared.mu)
	shared.leases = map[string]*LXD{}
}

// sharedPoolSize is LXDTEST_SHARED_POOL, or DefaultSharedPool.
func sharedPoolSize() int {
	n, err := strconv.Atoi(os.Getenv(sharedPoolEnv))
	if err != nil || n < 1 {
		return DefaultSharedPool
	}
	return n
}

// Shared returns a shared private LXD for the test, from a pool of daemons
// started on first use and kept for the whole test binary. The daemon is
// leased to the calling top-level test (and its subtests) until it ends: a
// test never shares its LXD with a test running at the same time, so tests
// that call t.Parallel each get their own, and a later test reuses it. When
// every daemon of the pool (LXDTEST_SHARED_POOL, default [DefaultSharedPool])
// is leased, Shared waits for one to be returned. When the test ends (after its
// own cleanups), every instance left in the daemon is force-deleted, with a log
// line naming it, so the next test starts without any.
//
// The daemons are never stopped by the test framework: call [StopShared] from
// TestMain after m.Run (see the package documentation). Without that they
// still die with the test binary, but their directories under /tmp and their
// mounts are left behind.
//
// Tests using a shared daemon must not change server-wide state and should
// give their instances unique names (e.g. derived from t.Name()) and delete
// them when done: later tests get the same daemon. Use [Start] for anything
// else.
//
// The test is skipped if [Available] says no.
func Shared(t testing.TB) *LXD {
	t.Helper()
	skipUnlessAvailable(t)
	root, _, _ := strings.Cut(t.Name(), "/")
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for {
		switch {
		case shared.stopped:
			t.Fatal("lxdtest: Shared called after StopShared")
		case shared.err != nil:
			t.Fatalf("lxdtest: shared LXD: %v", shared.err)
		}

		if l := shared.leases[root]; l != nil {
			return l
		}

		var l *LXD
		switch {
		case len(shared.free) > 0:
			l = shared.free[len(shared.free)-1]
			shared.free = shared.free[:len(shared.free)-1]
		case len(shared.all) < sharedPoolSize():
			l, shared.err = launch()
			if shared.err != nil {
				continue
			}
			shared.all = append(shared.all, l)
		default:
			shared.freed.Wait()
			continue
		}

		shared.leases[root] = l
		t.Cleanup(func() {
			// The test's own cleanups (its daemons stopped) have run by now: what is left
			// would be the next test's surprise (an autohealer's late replacement, say).
			for _, name := range l.sweep() {
				t.Logf("lxdtest: removed instance %s left in the shared LXD", name)
			}

			shared.mu.Lock()
			defer shared.mu.Unlock()
			delete(shared.leases, root)
			shared.free = append(shared.free, l)
			shared.freed.Signal()
		})
		return l
	}
}

// sweep force-deletes every instance of the daemon, whatever its protection, as a best
// effort, and returns the names of those it deleted.
func (l *LXD) sweep() []string {
	c, err := lxd.ConnectLXDUnix(l.Socket, nil)
	if err != nil {
		return nil
	}
	defer c.Disconnect()

	instances, err := c.GetInstances(api.InstanceTypeAny)
	if err != nil {
		return nil
	}
	var deleted []string
	for _, instance := range instances {
		if instance.Config["security.protection.delete"] != "" {
			put := instance.Writable()
			delete(put.Config, "security.protection.delete")
			if op, err := c.UpdateInstance(instance.Name, put, ""); err == nil {
				_ = op.Wait()
			}
		}
		if instance.StatusCode != api.Stopped {
			if op, err := c.UpdateInstanceState(instance.Name, api.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, ""); err == nil {
				_ = op.Wait()
			}
		}
		if op, err := c.DeleteInstance(instance.Name); err == nil && op.Wait() == nil {
			deleted = append(deleted, instance.Name)
		}
	}
	return deleted
}

// StopShared tears down the daemons started by [Shared], if any. Call it
// from TestMain after m.Run; failures are printed to stderr.
func StopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	shared.stopped = true
	for _, l := range shared.all {
		if err := l.p.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "lxdtest: cleanup of shared LXD %s: %v\n", l.Dir, err)
		}
	}
	shared.all, shared.free = nil, nil
}
