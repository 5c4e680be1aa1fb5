package test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// The platform nemesis (issue 31): LXD itself falters under the run. Its operations stop
// LXD's daemon and start it again (its containers keep running), freeze it, slow it or fail
// a share of its calls through the slow-LXD proxy the daemon talks to LXD through, and make
// exec fail to start. The invariants:
//
//   - no healthy instance is deleted, replaced or restarted: every instance of shape heal
//     (the shape with checks) whose last recorded check passed is guarded, with its init
//     pid, until the run's own operations make it sick or delete it; the sampler holds
//     LXD's list to the guard every 50 ms, and each fault's end holds the pids to it;
//   - after each fault, the daemon is online and every instance of heal healthy again
//     within platformRecovery (the longest time per kind is printed at the end).
//
// The bounds and the revisions (no acknowledged write lost) are the run's own invariants,
// which hold throughout. The run has one daemon: cutting a member's dqlite traffic needs a
// cluster of daemons, which the torture run does not have.

// platformRecovery bounds how long after a fault's end the instances take to be healthy
// again: generous, the figure itself is printed.
const platformRecovery = 90 * time.Second

// platformInvariant is the name of the invariant the guard holds.
const platformInvariant = "no healthy instance is deleted, replaced or restarted"

// platformOps are the faults of LXD itself, issue 31's. Every run draws them, `make test`'s
// (TORTURE_OPS safe) included: a fault whose fix has not landed moves to knownIssueOps
// with its issue, and openIssues leaves it out of the safe runs.
var platformOps = []tortureOp{
	{name: "platform-lxd-restart", weight: 1, issue: "31", run: func(tt *torture) string {
		down := time.Duration(2000+tt.rng.Intn(10000)) * time.Millisecond
		return tt.platformFault("lxd-restart", func() string {
			// At the worst moment: right after the daemon's probe found LXD answering.
			tt.platform.proxy.WaitFor("GET", "/1.0", 10*time.Second)
			tt.lxd.StopDaemon(tt.t)
			time.Sleep(down)
			tt.lxd.StartDaemon(tt.t)
			return fmt.Sprintf("LXD stopped (SIGTERM) and started again after %v", down)
		})
	}},
	{name: "platform-lxd-crash", weight: 1, issue: "31", run: func(tt *torture) string {
		down := time.Duration(1000+tt.rng.Intn(8000)) * time.Millisecond
		return tt.platformFault("lxd-crash", func() string {
			tt.platform.proxy.WaitFor("GET", "/1.0", 10*time.Second)
			tt.lxd.KillDaemon(tt.t)
			time.Sleep(down)
			tt.lxd.StartDaemon(tt.t)
			return fmt.Sprintf("LXD killed (SIGKILL) and started again after %v", down)
		})
	}},
	{name: "platform-lxd-freeze", weight: 1, issue: "31", run: func(tt *torture) string {
		frozen := time.Duration(3000+tt.rng.Intn(12000)) * time.Millisecond
		return tt.platformFault("lxd-freeze", func() string {
			tt.lxd.Freeze(tt.t)
			time.Sleep(frozen)
			tt.lxd.Thaw(tt.t)
			return fmt.Sprintf("LXD frozen %v", frozen)
		})
	}},
	{name: "platform-lxd-slow", weight: 1, issue: "31", run: func(tt *torture) string {
		f := lxdtest.ProxyFaults{Delay: time.Duration(300+tt.rng.Intn(2500)) * time.Millisecond, Jitter: 500 * time.Millisecond}
		return tt.proxyFault("lxd-slow", f, time.Duration(4000+tt.rng.Intn(8000))*time.Millisecond)
	}},
	{name: "platform-lxd-failing", weight: 1, issue: "31.b", run: func(tt *torture) string {
		f := lxdtest.ProxyFaults{FailShare: float64(20+tt.rng.Intn(50)) / 100}
		return tt.proxyFault("lxd-failing", f, time.Duration(4000+tt.rng.Intn(8000))*time.Millisecond)
	}},
	{name: "platform-exec-fails", weight: 1, issue: "31", run: func(tt *torture) string {
		return tt.proxyFault("exec-fails", lxdtest.ProxyFaults{ExecFails: true}, time.Duration(4000+tt.rng.Intn(8000))*time.Millisecond)
	}},
}

// platformFirstBy is the operation by which a run has injected a fault of LXD: when none
// of the first ones drawn was one, this one is (drawn among them with the run's seed), so
// that `make test`'s 60 s always has one.
const platformFirstBy = 8

// platformDue returns op, or a fault of LXD drawn in its place when the run reaches
// platformFirstBy operations without one.
func (tt *torture) platformDue(op tortureOp) tortureOp {
	if tt.ops != platformFirstBy || strings.HasPrefix(op.name, "platform-") {
		return op
	}

	var faults []tortureOp
	for _, o := range tt.cfg.ops {
		if strings.HasPrefix(o.name, "platform-") {
			if tt.opCounts[o.name] > 0 {
				return op
			}

			faults = append(faults, o)
		}
	}

	if len(faults) == 0 {
		return op
	}

	return faults[tt.rng.Intn(len(faults))]
}

// platform is what the nemesis keeps over a run.
type platform struct {
	proxy *lxdtest.Proxy

	mu       sync.Mutex
	guarded  map[string]int64 // heal instances whose last check passed -> init pid
	released map[string]bool  // made sick or deleted by the run: never guarded again
	faults   map[string]int   // injected, by kind
	longest  map[string]time.Duration
	stop     func() // ends the guard's watcher
}

// startPlatform puts the slow-LXD proxy between the daemon and LXD (it passes everything
// until a fault) and starts the guard's watcher, which reads heal's records every second.
func (tt *torture) startPlatform() {
	tt.platform = &platform{
		proxy:    lxdtest.StartProxy(tt.t, tt.lxd.Socket, tt.cfg.seed),
		guarded:  map[string]int64{},
		released: map[string]bool{},
		faults:   map[string]int{},
		longest:  map[string]time.Duration{},
	}
}

// watchHealth guards heal's healthy instances every second (with sampleEvery) until
// stopWatching.
func (tt *torture) watchHealth() {
	tt.platform.stop = sampleEvery(tt.t, time.Second, tt.guardHealthy)
}

// stopWatching ends watchHealth.
func (tt *torture) stopWatching() {
	tt.platform.stop()
}

// guardHealthy guards every instance of heal the daemon records as healthy (its last
// check passed), with its init pid as LXD reports it, unless the run released it.
func (tt *torture) guardHealthy() {
	instances, err := tt.watcher.GetDeploymentShapeInstances("dep1", "heal")
	if err != nil {
		return
	}

	p := tt.platform
	for _, i := range instances {
		if i.State != "created" || i.Health != api.HealthHealthy || i.Lifecycle != "" {
			continue
		}

		p.mu.Lock()
		_, known := p.guarded[i.Name]
		skip := known || p.released[i.Name]
		p.mu.Unlock()
		if skip {
			continue
		}

		state, _, err := tt.sampleConn.GetInstanceState(i.Name)
		if err != nil || state.Pid == 0 {
			continue
		}

		p.mu.Lock()
		if !p.released[i.Name] {
			p.guarded[i.Name] = state.Pid
		}

		p.mu.Unlock()
	}
}

// release stops guarding an instance the run itself makes sick or deletes.
func (tt *torture) release(name string) {
	if tt.platform == nil {
		return
	}

	p := tt.platform
	p.mu.Lock()
	delete(p.guarded, name)
	p.released[name] = true
	p.mu.Unlock()
}

// checkGuarded holds one sample of LXD's list to the guard: every guarded instance is
// still there.
func (tt *torture) checkGuarded(s lxdSample) {
	if tt.platform == nil {
		return
	}

	present := map[string]bool{}
	for _, n := range s.names["heal"] {
		present[strings.SplitN(n, "(", 2)[0]] = true
	}

	p := tt.platform
	p.mu.Lock()
	var gone []string
	for name := range p.guarded {
		if !present[name] {
			gone = append(gone, name)
			delete(p.guarded, name)
			p.released[name] = true
		}
	}

	p.mu.Unlock()
	sort.Strings(gone)
	for _, name := range gone {
		tt.violate(platformInvariant, "healthy instance %s is gone from LXD (%s); heal in LXD: %v", name, tt.lastFault(), s.names["heal"])
	}
}

// checkPids holds the guarded instances' init pids to LXD's: a healthy instance is not
// restarted either.
func (tt *torture) checkPids(when string) {
	p := tt.platform
	p.mu.Lock()
	guarded := map[string]int64{}
	for name, pid := range p.guarded {
		guarded[name] = pid
	}

	p.mu.Unlock()
	for name, pid := range guarded {
		state, _, err := tt.lxdConn.GetInstanceState(name)
		if err != nil {
			continue // gone: the sampler says so
		}

		if state.Pid != pid {
			tt.violate(platformInvariant, "healthy instance %s restarted %s: init pid %d -> %d", name, when, pid, state.Pid)
			tt.release(name)
		}
	}
}

// lastFault names the last fault injected, for violations.
func (tt *torture) lastFault() string {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for i := len(tt.log) - 1; i >= 0; i-- {
		if strings.Contains(tt.log[i], " platform-") && !strings.Contains(tt.log[i], " VIOLATION ") {
			return "last fault: " + strings.TrimSpace(tt.log[i])
		}
	}

	return "no fault injected yet"
}

// proxyFault applies faults through the proxy for a while, then ends them.
func (tt *torture) proxyFault(kind string, f lxdtest.ProxyFaults, d time.Duration) string {
	return tt.platformFault(kind, func() string {
		p := tt.platform.proxy
		calls, failed, _ := p.Counts()
		p.Set(f)
		time.Sleep(d)
		p.Set(lxdtest.ProxyFaults{})
		calls2, failed2, _ := p.Counts()
		return fmt.Sprintf("%+v for %v: %d calls, %d answered 500", f, d, calls2-calls, failed2-failed)
	})
}

// platformFault guards heal's healthy instances, injects a fault, and waits until the
// daemon is online and every instance of heal is healthy again, which must take less than
// platformRecovery; then the guarded pids must be the same.
func (tt *torture) platformFault(kind string, inject func() string) string {
	filled := tt.fillHeal()
	tt.guardHealthy()
	p := tt.platform
	p.mu.Lock()
	p.faults[kind]++
	guarded := len(p.guarded)
	p.mu.Unlock()
	what := filled + inject()
	took, state := tt.waitPlatformHealthy(platformRecovery)
	if took < 0 {
		tt.violate("after a fault of LXD, every instance is healthy again within "+platformRecovery.String(), "%s (%s): %s", kind, what, state)
		return fmt.Sprintf("%s; %d guarded; NOT healthy again within %v: %s", what, guarded, platformRecovery, state)
	}

	p.mu.Lock()
	p.longest[kind] = max(p.longest[kind], took)
	p.mu.Unlock()
	tt.checkPids("after " + kind)
	return fmt.Sprintf("%s; %d guarded; healthy again %v after", what, guarded, took.Round(time.Millisecond))
}

// fillHeal launches shape heal up to its maximum and waits (up to 20 s) until its
// instances are healthy, so that a fault has healthy instances with checks to guard; it
// leaves heal alone while it is busy (an instance made sick, one being replaced).
func (tt *torture) fillHeal() string {
	if busy := tt.healBusy(); busy != "" {
		return "heal not filled (" + busy + "); "
	}

	names, err := tt.createdNames("heal")
	if err != nil {
		return "heal not filled (" + describe(err) + "); "
	}

	var out []string
	for i := len(names); i < tt.shapes["heal"].max; i++ {
		name := tt.nextName("heal")
		err := tt.launch("heal", name)
		out = append(out, "filled heal with "+name+": "+describe(err))
		if err != nil {
			break
		}
	}

	if took, state := tt.waitPlatformHealthy(20 * time.Second); took < 0 {
		out = append(out, "heal not healthy before the fault: "+state)
	}

	if len(out) == 0 {
		return ""
	}

	return strings.Join(out, "; ") + "; "
}

// waitPlatformHealthy waits until the daemon says LXD is online and every instance of heal
// is created and healthy; it returns how long that took, or -1 and what it saw last.
func (tt *torture) waitPlatformHealthy(timeout time.Duration) (time.Duration, string) {
	began := time.Now()
	state := ""
	if !poll(timeout, func() bool {
		state = tt.platformState()
		return state == ""
	}, every(250*time.Millisecond)) {
		return -1, state
	}

	return time.Since(began), ""
}

// platformState says why the platform is not healthy yet, or "" when it is.
func (tt *torture) platformState() string {
	server, _, err := tt.watcher.GetServer()
	if err != nil {
		return describe(err)
	}

	if server.Environment == nil || server.Environment.LXDStatus != "online" {
		return "the daemon does not see LXD online"
	}

	instances, err := tt.watcher.GetDeploymentShapeInstances("dep1", "heal")
	if err != nil {
		return describe(err)
	}

	var out []string
	for _, i := range instances {
		if i.State != "created" || i.Health != api.HealthHealthy {
			out = append(out, fmt.Sprintf("%s %s/%s", i.Name, i.State, i.Health))
		}
	}

	return strings.Join(out, ", ")
}

// reportPlatform prints the faults injected by kind, the longest time to healthy after each
// kind, and every replacement autohealing made with its reason (from the activity log),
// each said to be of an instance the run made sick or not.
func (tt *torture) reportPlatform() {
	p := tt.platform
	tt.checkPids("at the end")
	var kinds []string
	p.mu.Lock()
	for kind, n := range p.faults {
		kinds = append(kinds, fmt.Sprintf("%s=%d (healthy again within %v of its end; bound %v)", kind, n, p.longest[kind].Round(time.Millisecond), platformRecovery))
	}

	p.mu.Unlock()
	sort.Strings(kinds)
	calls, failed, slowed := p.proxy.Counts()
	entries, err := tt.admin.GetDeploymentActivity("dep1", 0, "")
	var replaced []string
	holds := map[string]int{}
	for _, a := range entries {
		if a.Who != "autoheal" {
			continue
		}

		if strings.HasPrefix(a.Action, "autohealing-") { // held, resumed
			holds[a.Shape+" "+a.Action]++
			continue
		}

		sickened := false
		for name := range tt.sick {
			sickened = sickened || strings.Contains(a.Why, "replace "+name+" ")
		}

		tag := "an instance the run did not make sick"
		if sickened {
			tag = "made sick by the run"
		}

		replaced = append(replaced, fmt.Sprintf("%s %s: %s [%s]", a.Shape, a.Action, a.Why, tag))
	}

	if err != nil {
		replaced = append(replaced, "activity log: "+describe(err))
	}

	count := len(replaced)
	if count == 0 {
		replaced = append(replaced, "none")
	}

	var held []string
	for what, n := range holds {
		held = append(held, fmt.Sprintf("%s=%d", what, n))
	}

	sort.Strings(held)
	tt.t.Logf("torture platform: faults injected: %s\n  proxy: %d calls, %d answered 500, %d delayed\n  autohealing's holds: %s\n  autohealing's replacements and scale changes (%d):\n    %s",
		strings.Join(kinds, " "), calls, failed, slowed, strings.Join(append(held, ""), " "), count, strings.Join(replaced, "\n    "))
}
