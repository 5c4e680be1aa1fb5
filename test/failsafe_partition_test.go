package test

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// Issue 31, item 5: the platform nemesis includes, for a daemon cluster, a member's dqlite
// traffic cut. Three members each run in a network namespace of their own on one bridge
// (lxdtest.Partition), beside one private LXD they reach over its unix socket, which the
// cut does not touch: a member cut off still sees LXD and its instances, and only its
// database (dqlite, raft) and member-to-member HTTPS traffic is gone.

// partitionCut is how long a member is cut off: past the 8 s lease TTL, so that the lease
// moves, and past the 5 s after which a member is listed offline.
const partitionCut = 15 * time.Second

// partitionHealthyBound is how long every instance may take to be healthy again (a fresh,
// passing check by the lease holder) after the cut heals.
const partitionHealthyBound = time.Minute

// partitionMembers starts m1 and joins m2 and m3, each inside its namespace of p, with the
// daemon settings of the fail-safe suite, and waits for three voters led by m1.
func partitionMembers(t *testing.T, lxdSocket string, p *lxdtest.Partition) map[string]*daemon {
	t.Helper()
	args := []string{"--reconcile-interval", "1s", "--lxd-poll-interval", "5s"}
	start := func(name string, extra ...string) *daemon {
		return startDaemon(t, daemonOptions{LXDSocket: lxdSocket, Cluster: true, NetNS: p.NetNS(name), Host: p.Address(name), ExtraArgs: append(extra, args...)})
	}

	members := map[string]*daemon{"m1": start("m1", "--cluster-name", "m1")}
	for _, name := range []string{"m2", "m3"} {
		token, err := members["m1"].Unix(t).CreateClusterJoinToken(name)
		must(t, err)
		members[name] = start(name, "--cluster-join-token", token.Token)
	}

	var list []api.ClusterMember
	var err error
	waitUntil(t, "three voters led by m1", 30*time.Second, func() bool {
		list, err = members["m1"].Unix(t).GetClusterMembers()
		voters := 0
		for _, m := range list {
			if m.DatabaseRole == "voter" {
				voters++
			}
		}

		return err == nil && voters == 3 && databaseLeader(list) == "m1"
	}, every(100*time.Millisecond), showing(func() string { return fmt.Sprintf("%+v %v", list, err) }))
	for _, m := range members {
		waitLXDOnline(t, m)
	}

	return members
}

// databaseLeader is the member the list says leads dqlite, or "".
func databaseLeader(list []api.ClusterMember) string {
	for _, m := range list {
		if m.DatabaseLeader {
			return m.ServerName
		}
	}

	return ""
}

// leaseEvent is a line of a member's log about the instances lease.
type leaseEvent struct {
	at     time.Time
	member string
	what   string // acquired (token) or "not held" (why)
	token  int
}

var (
	logTime       = regexp.MustCompile(`^time=(\S+) `)
	logLeaseToken = regexp.MustCompile(` token=(\d+)`)
	logLeaseErr   = regexp.MustCompile(` err=("(?:[^"\\]|\\.)*"|\S+)`)
)

// instancesLease reads the members' logs: every time one acquired the instances lease (the
// one under which health checks and autohealing run) or lost it, in time order.
func instancesLease(members map[string]*daemon) []leaseEvent {
	var events []leaseEvent
	for name, d := range members {
		for _, line := range strings.Split(d.Log(), "\n") {
			if !strings.Contains(line, " lease=instances") {
				continue
			}

			e := leaseEvent{member: name}
			if m := logTime.FindStringSubmatch(line); m != nil {
				e.at, _ = time.Parse(time.RFC3339Nano, m[1])
			}

			switch {
			case strings.Contains(line, `msg="lease acquired"`):
				m := logLeaseToken.FindStringSubmatch(line)
				if m == nil {
					continue
				}

				e.token, _ = strconv.Atoi(m[1])
				e.what = "acquired (token " + m[1] + ")"
			case strings.Contains(line, `msg="lease not held"`):
				e.what = "not held"
				if m := logLeaseErr.FindStringSubmatch(line); m != nil {
					e.what += ": " + m[1]
				}
			default:
				continue
			}

			events = append(events, e)
		}
	}

	sort.SliceStable(events, func(i, j int) bool { return events[i].at.Before(events[j].at) })
	return events
}

// leaseHolder is the member that acquired the instances lease last (the largest token), or
// "" when none has: the holder unless it has since lost the lease.
func leaseHolder(members map[string]*daemon) string {
	holder, token := "", 0
	for _, e := range instancesLease(members) {
		if e.token > token {
			holder, token = e.member, e.token
		}
	}

	return holder
}

// leaseTimeline describes the lease's events since since, for the log.
func leaseTimeline(members map[string]*daemon, since time.Time, origin time.Time) string {
	var out []string
	for _, e := range instancesLease(members) {
		if e.at.Before(since) {
			continue
		}

		out = append(out, fmt.Sprintf("%+.1fs %s %s", e.at.Sub(origin).Seconds(), e.member, e.what))
	}

	if len(out) == 0 {
		return "no change"
	}

	return strings.Join(out, "; ")
}

// fleetWatch reads LXD's own list of the shape's instances every 250 ms and keeps the
// first change to the fleet it was given (a healthy instance deleted, restarted or
// replaced) and the most instances seen at once.
type fleetWatch struct {
	mu      sync.Mutex
	changes []string
	most    int
	samples int
	errors  int
	stop    func()
}

func watchFleet(t *testing.T, conn lxd.InstanceServer, before map[string]int64, origin time.Time) *fleetWatch {
	t.Helper()
	w := &fleetWatch{}
	w.stop = sampleEvery(t, 250*time.Millisecond, func() {
		// sampleLXD's listing has no state: the init pids are in the full one.
		instances, err := conn.GetInstancesFull(lxdapi.InstanceTypeAny)
		w.mu.Lock()
		defer w.mu.Unlock()
		if err != nil {
			w.errors++
			return
		}

		now := map[string]int64{}
		for _, i := range instances {
			if i.Config[configDeployment] != "dep1" || i.Config[configShape] != "web" || i.Config[configWarmPool] == "true" {
				continue
			}

			now[i.Name] = 0
			if i.State != nil {
				now[i.Name] = i.State.Pid
			}
		}

		w.samples++
		w.most = max(w.most, len(now))
		if changes := fleetChanges(before, now); changes != "" && (len(w.changes) == 0 || !strings.HasSuffix(w.changes[len(w.changes)-1], changes)) {
			w.changes = append(w.changes, fmt.Sprintf("%+.1fs %s", time.Since(origin).Seconds(), changes))
		}
	})

	return w
}

// finish stops the watch and returns the changes seen, the most instances at once, and how
// many samples were read and failed.
func (w *fleetWatch) finish() ([]string, int, int, int) {
	w.stop()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.changes, w.most, w.samples, w.errors
}

// waitFreshHealthy waits until, through admin, the shape has failsafeSize instances, all
// healthy by a check that ran (not stale) after since, and returns how long after since.
func (e *failsafeEnv) waitFreshHealthy(t testing.TB, what string, since time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	waitUntil(t, what, timeout, func() bool {
		instances, err := e.admin.GetDeploymentShapeInstances("dep1", "web")
		if err != nil || len(instances) != failsafeSize {
			return false
		}

		for _, i := range instances {
			c := i.HealthCheck
			if i.State != "created" || i.Health != api.HealthHealthy || c == nil || c.Stale || c.CheckedAt == nil || !c.CheckedAt.After(since) {
				return false
			}
		}

		return true
	}, showing(func() string { return e.healthState(t) }), withLog(e.d.Log))
	return time.Since(since)
}

// waitThreeVoters waits until, through d, three voters are online and one leads.
func waitThreeVoters(t testing.TB, d *daemon) {
	t.Helper()
	var list []api.ClusterMember
	var err error
	waitUntil(t, "three voters online with a leader", 30*time.Second, func() bool {
		list, err = d.Unix(t).GetClusterMembers()
		voters := 0
		for _, m := range list {
			if m.DatabaseRole == "voter" && m.Status == "Online" {
				voters++
			}
		}

		return err == nil && voters == 3 && databaseLeader(list) != ""
	}, every(200*time.Millisecond), showing(func() string { return fmt.Sprintf("%+v %v", list, err) }))
}

// separateLeaseFromLeader restarts (SIGTERM, which hands dqlite leadership over and
// releases the member's leases) the member that both leads dqlite and holds the instances
// lease, until two members do, at most 4 times. It returns the leader and the holder.
func separateLeaseFromLeader(t *testing.T, members map[string]*daemon) (string, string) {
	t.Helper()
	for attempt := 0; ; attempt++ {
		list, err := members["m1"].Unix(t).GetClusterMembers()
		must(t, err)
		leader, holder := databaseLeader(list), leaseHolder(members)
		if leader != "" && leader != holder {
			t.Logf("dqlite leader %s, instances lease held by %s", leader, holder)
			return leader, holder
		}

		if attempt == 4 {
			t.Fatalf("%s still leads dqlite and holds the instances lease after 4 restarts", leader)
		}

		t.Logf("%s leads dqlite and holds the instances lease: restarting it", leader)
		token := 0
		for _, e := range instancesLease(members) {
			token = max(token, e.token)
		}

		members[leader].Stop(t)
		members[leader].Start(t, "--reconcile-interval", "1s", "--lxd-poll-interval", "5s")
		waitUntil(t, "another member taking the instances lease over", 30*time.Second, func() bool {
			for _, e := range instancesLease(members) {
				if e.token > token {
					return true
				}
			}

			return false
		})
		waitThreeVoters(t, members["m1"])
		waitLXDOnline(t, members[leader])
	}
}

// lastChecks says, through admin, when the latest check of any instance was recorded, and
// how long the listing took: whether health checks go on.
func (e *failsafeEnv) lastChecks(t testing.TB) string {
	t.Helper()
	began := time.Now()
	instances, err := e.admin.GetDeploymentShapeInstances("dep1", "web")
	took := time.Since(began).Round(time.Millisecond)
	if err != nil {
		return fmt.Sprintf("the listing failed after %v: %v", took, err)
	}

	var latest time.Time
	for _, i := range instances {
		if c := i.HealthCheck; c != nil && c.CheckedAt != nil && c.CheckedAt.After(latest) {
			latest = *c.CheckedAt
		}
	}

	return fmt.Sprintf("the latest check recorded %v before the listing, which took %v", began.Sub(latest).Round(100*time.Millisecond), took)
}

// TestFailSafeDaemonPartition: under a steady load of writes through every member, the
// member holding the instances lease (health checks, autohealing) is cut off from the other
// two for 15 s, then the dqlite leader if that is another member. Nothing healthy is
// deleted, restarted or replaced (LXD's own list, init pids), LXD never holds more than the
// shape's bound, no acknowledged write is lost, and after each cut every instance is
// healthy again by a fresh check within partitionHealthyBound. Then the control: a really
// sick instance is still replaced. Serial: a dqlite cluster, whose elections and leases
// run on timers that a busy machine stretches (test/main_test.go).
func TestFailSafeDaemonPartition(t *testing.T) {
	private := lxdtest.Start(t)
	net := lxdtest.StartPartition(t, "m1", "m2", "m3")
	members := partitionMembers(t, private.Socket, net)
	e := &failsafeEnv{lxd: private, lxdConn: private.Client(t), d: members["m1"], admin: members["m1"].Unix(t), prefix: fmt.Sprintf("fp%d", time.Now().UnixNano()%1e6)}
	e.launchShape(t)

	origin := time.Now()
	e.waitFreshHealthy(t, "the shape's instances healthy", origin.Add(-time.Minute), time.Minute)
	waitUntil(t, "a member holding the instances lease", 30*time.Second, func() bool { return leaseHolder(members) != "" })
	t.Logf("instances lease: %s", leaseTimeline(members, time.Time{}, origin))

	var acked []string
	phases := 0
	cutPhase := func(victim string, role string) {
		phases++
		phase(t, "cut "+victim+" ("+role+")", func(t *testing.T) {
			// Read and wait through a member that stays connected.
			for name, d := range members {
				if name != victim {
					e.d, e.admin = d, d.Unix(t)
					break
				}
			}

			waitThreeVoters(t, e.d)
			list, err := e.admin.GetClusterMembers()
			must(t, err)
			t.Logf("before: dqlite leader %s, instances lease held by %s; cutting %s", databaseLeader(list), leaseHolder(members), victim)
			before := e.fleet(t)
			began := time.Now()
			watch := watchFleet(t, private.Client(t), before, origin)
			var loads []*writeLoad
			for _, name := range []string{"m1", "m2", "m3"} {
				loads = append(loads, startWrites(t, members[name], fmt.Sprintf("p%d-%s", phases, name)))
			}

			time.Sleep(2 * time.Second)
			net.Cut(t, victim)
			cutAt := time.Now()
			time.Sleep(partitionCut)
			t.Logf("after %v cut off: %s", partitionCut, e.lastChecks(t))
			net.Heal(t, victim)
			healed := time.Now()
			took := e.waitFreshHealthy(t, "every instance healthy again by a fresh check", healed, partitionHealthyBound)
			t.Logf("every instance healthy again (a fresh passing check) %v after the cut healed (bound %v)", took.Round(time.Millisecond), partitionHealthyBound)
			time.Sleep(5 * time.Second) // autohealing rounds after the heal, still watched
			for i, load := range loads {
				worst, ok, failed := load.finish()
				acked = append(acked, ok...)
				sample := failed
				if len(sample) > 3 {
					sample = sample[:3]
				}

				t.Logf("writes through m%d: %d acknowledged, %d failed, longest %v (sent %+.1fs after the cut); failures e.g. %v", i+1, len(ok), len(failed), worst.Round(time.Millisecond), load.longestBegan().Sub(cutAt).Seconds(), sample)
			}

			changes, most, samples, errs := watch.finish()
			t.Logf("LXD's list read %d times (%d failed) over %v; at most %d instances of web (scaling_maximum %d)", samples, errs, time.Since(began).Round(time.Second), most, failsafeSize+1)
			t.Logf("instances lease since the cut (seconds from the test's start; cut at %+.1fs, healed at %+.1fs): %s", cutAt.Sub(origin).Seconds(), healed.Sub(origin).Seconds(), leaseTimeline(members, began, origin))
			if len(changes) > 0 {
				t.Errorf("healthy instances deleted, restarted or replaced: %s\n%s\nautohealing's activity: %s", strings.Join(changes, "; "), e.healthState(t), e.autohealActivity(t))
			}

			if most > failsafeSize+1 {
				t.Errorf("LXD held %d instances of web, over its scaling_maximum %d", most, failsafeSize+1)
			}

			for name, d := range members {
				if lost := missing(t, d, acked); len(lost) > 0 {
					t.Errorf("acknowledged writes lost, read through %s: %d of %d: %v", name, len(lost), len(acked), lost)
				}
			}
		})
	}

	// First the lease holder as the cluster started (m1, which leads dqlite too), then the
	// dqlite leader alone, then the lease holder alone.
	holder := leaseHolder(members)
	list, err := e.admin.GetClusterMembers()
	must(t, err)
	role := "instances lease"
	if databaseLeader(list) == holder {
		role += " and dqlite leader"
	}

	cutPhase(holder, role)
	leader, _ := separateLeaseFromLeader(t, members)
	cutPhase(leader, "dqlite leader, not the lease holder")
	_, holder = separateLeaseFromLeader(t, members)
	cutPhase(holder, "instances lease, not the dqlite leader")
	phase(t, "control", func(t *testing.T) {
		t.Logf("control: the sick instance replaced by a healthy one in %v", e.control(t))
		t.Logf("instances lease over the whole test: %s", leaseTimeline(members, time.Time{}, origin))
	})
}
