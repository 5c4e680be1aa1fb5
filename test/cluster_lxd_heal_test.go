package test

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// clusterSampler lists the cluster's instances of a shape (by name prefix) from LXD itself,
// every 250 ms, with the status of each member, and keeps the worst it saw.
type clusterSampler struct {
	mu sync.Mutex

	maxReachable int // instances on members LXD reports online
	maxTotal     int // every instance LXD lists, unreachable ones included
	overSince    time.Time
	over         time.Duration // how long reachable instances were above the maximum
	samples      int
	last         string
}

// sampleLXD samples until the test ends or stop is called.
func (e *clusterEnv) sampleLXD(t *testing.T, maximum int) (*clusterSampler, func()) {
	s := &clusterSampler{}
	cl := e.lxd.Client(t)
	stopSampling := sampleEvery(t, 250*time.Millisecond, func() {
		members, err1 := cl.GetClusterMembers()
		insts, err2 := cl.GetInstances(lxdapi.InstanceTypeAny)
		if err1 == nil && err2 == nil {
			online := map[string]bool{}
			for _, m := range members {
				online[m.ServerName] = m.Status == "Online"
			}

			reachable, total := 0, 0
			perMember := map[string]int{}
			for _, inst := range insts {
				if !strings.HasPrefix(inst.Name, e.prefix) {
					continue
				}

				total++
				perMember[inst.Location]++
				if online[inst.Location] {
					reachable++
				}
			}

			s.mu.Lock()
			s.samples++
			s.maxReachable = max(s.maxReachable, reachable)
			s.maxTotal = max(s.maxTotal, total)
			s.last = describeCounts(perMember)
			now := time.Now()
			switch {
			case reachable > maximum && s.overSince.IsZero():
				s.overSince = now
			case reachable <= maximum && !s.overSince.IsZero():
				s.over += now.Sub(s.overSince)
				s.overSince = time.Time{}
			}
			s.mu.Unlock()
		}
	})

	stop := func() {
		stopSampling()
		s.mu.Lock()
		if !s.overSince.IsZero() {
			s.over += time.Since(s.overSince)
			s.overSince = time.Time{}
		}
		s.mu.Unlock()
	}

	t.Cleanup(stop)
	return s, stop
}

// TestLXDClusterMemberLossHealedWithinBounds SIGKILLs one member's LXD under a shape of 6
// spread 2/2/2 at its maximum, with autohealing: the 2 instances there turn unreachable and
// are replaced on the other members; when the member returns its 2 instances are deleted.
// A sampler of LXD's own listing measures the worst case (doc/placement.md: unreachable
// instances do not count against the maximum while their member is offline).
func TestLXDClusterMemberLossHealedWithinBounds(t *testing.T) {
	e := newClusterEnv(t, nil)
	web := webShape("web", 0, 6)
	web.Placement = &api.DeploymentShapePlacement{Spread: api.PlacementSpreadMember}
	web.Health = sickFileHealth()
	must(t, e.admin.CreateDeploymentShape("dep1", web))
	var names []string
	for i := range 6 {
		names = append(names, fmt.Sprintf("%s%d", e.prefix, i))
	}

	e.launch(t, "web", names...)
	if got := describeCounts(e.perMember(t, "web")); got != "m1=2 m2=2 m3=2" {
		t.Fatalf("6 launches landed %s, want 2/2/2", got)
	}

	waitUntil(t, "every instance healthy", 30*time.Second, func() bool {
		for _, inst := range must2(e.admin.GetDeploymentShapeInstances("dep1", "web"))(t) {
			if inst.Health != api.HealthHealthy {
				return false
			}
		}

		return true
	}, every(200*time.Millisecond), showing(func() string {
		var out []string
		for _, inst := range must2(e.admin.GetDeploymentShapeInstances("dep1", "web"))(t) {
			check := ""
			if inst.HealthCheck != nil {
				check = fmt.Sprintf("%+v", *inst.HealthCheck)
			}

			out = append(out, inst.Name+" "+inst.Health+" "+check)
		}

		return strings.Join(out, "\n")
	}))

	sampler, stop := e.sampleLXD(t, 6)
	m2 := e.lxd.Member(t, "m2")
	m2.Kill(t)
	killed := time.Now()

	// Replaced on m1 and m3: 6 reachable, running, healthy instances again.
	healed := func() (bool, string) {
		healthy := 0
		perMember := map[string]int{}
		for _, inst := range must2(e.admin.GetDeploymentShapeInstances("dep1", "web"))(t) {
			if inst.State == "created" && inst.Status == "Running" && inst.Health == api.HealthHealthy {
				healthy++
				perMember[inst.Location]++
			}
		}

		return healthy == 6 && perMember["m2"] == 0, describeCounts(perMember)
	}

	waitUntil(t, "m2's instances replaced on m1 and m3", 90*time.Second, func() bool { ok, _ := healed(); return ok }, every(250*time.Millisecond))
	_, where := healed()
	t.Logf("healed %v after SIGKILL (cluster.offline_threshold 11s): %s", time.Since(killed), where)
	if where != "m1=3 m3=3" {
		t.Errorf("replacements landed %s, want m1=3 m3=3", where)
	}

	m2.Restart(t)
	restarted := time.Now()
	waitUntil(t, "m2's old instances deleted once it returned", 90*time.Second, func() bool {
		locations := e.lxd.Locations(t, e.prefix)
		for _, member := range locations {
			if member == "m2" {
				return false
			}
		}

		return len(locations) == 6
	}, every(250*time.Millisecond))
	t.Logf("m2's old instances gone %v after its LXD restarted", time.Since(restarted))
	stop()
	sampler.mu.Lock()
	defer sampler.mu.Unlock()
	t.Logf("LXD's listing over %d samples: at most %d instances on online members, %d in all (unreachable included); above the maximum (6) on online members for %v in all",
		sampler.samples, sampler.maxReachable, sampler.maxTotal, sampler.over)
	if sampler.maxTotal > 8 {
		t.Errorf("LXD listed %d instances of the shape at worst: more than the maximum plus the 2 unreachable ones", sampler.maxTotal)
	}

	if got := describeCounts(e.perMember(t, "web")); got != "m1=3 m3=3" {
		t.Errorf("after m2 returned the shape is %s, want m1=3 m3=3 (a rebalance spreads it again)", got)
	}
}
