package test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/policy"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// clusterEnv is a daemon on member m1 of a private 3-member LXD cluster (test/lxdtest,
// StartCluster), with deployment dep1. Instance names start with prefix: the cluster's
// containers share the host's cgroup tree with every other test's.
type clusterEnv struct {
	lxd    *lxdtest.Cluster
	d      *daemon
	admin  *client.Server
	prefix string
}

func newClusterEnv(t *testing.T, groups map[string][]string) *clusterEnv {
	t.Helper()
	start := time.Now()
	c := lxdtest.StartCluster(t, lxdtest.ClusterOptions{Groups: groups})
	t.Logf("3-member LXD cluster formed in %v", time.Since(start))
	d := startDaemon(t, daemonOptions{LXDSocket: c.Socket(), ExtraArgs: []string{"--lxd-poll-interval", "500ms"}})
	waitLXDOnline(t, d)
	admin := d.Unix(t)
	must(t, admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	return &clusterEnv{lxd: c, d: d, admin: admin, prefix: fmt.Sprintf("pc-%d-", os.Getpid())}
}

// launch launches the named instances of a shape concurrently and waits for them.
func (e *clusterEnv) launch(t *testing.T, shape string, names ...string) {
	t.Helper()
	errs := make(chan error, len(names))
	for _, name := range names {
		go func() {
			op, err := e.admin.CreateDeploymentShapeInstance("dep1", shape, name)
			if err == nil {
				err = op.Wait(context.Background())
			}

			errs <- err
		}()
	}

	for range names {
		must(t, <-errs)
	}
}

// perMember counts what a listing of the shape's instances says of their members, and
// checks it against where LXD itself has them.
func (e *clusterEnv) perMember(t *testing.T, shape string) map[string]int {
	t.Helper()
	instances, err := e.admin.GetDeploymentShapeInstances("dep1", shape)
	must(t, err)
	inLXD := e.lxd.Locations(t, "") // the cluster is the test's own
	counts := map[string]int{}
	for _, inst := range instances {
		if inst.Location != inLXD[inst.Name] {
			t.Errorf("instance %s: the API says location %q, LXD says %q", inst.Name, inst.Location, inLXD[inst.Name])
		}

		counts[inst.Location]++
	}

	return counts
}

// TestLXDClusterLocationAndMemberLoss runs a shape's instances on a real 3-member LXD
// cluster: the API shows the member each runs on, as LXD has it; when a member's LXD is
// SIGKILLed its instances turn Unreachable (API and metrics), and back when it returns.
func TestLXDClusterLocationAndMemberLoss(t *testing.T) {
	e := newClusterEnv(t, map[string][]string{"gpu": {"m3"}})
	web := webShape("web", 0, 6)
	web.Placement = &api.DeploymentShapePlacement{Spread: api.PlacementSpreadMember}
	must(t, e.admin.CreateDeploymentShape("dep1", web))
	var names []string
	for i := range 6 {
		names = append(names, fmt.Sprintf("%s%d", e.prefix, i))
	}

	start := time.Now()
	e.launch(t, "web", names...)
	t.Logf("6 launches on the cluster took %v", time.Since(start))
	counts := e.perMember(t, "web")
	t.Logf("instances per member: %v", counts)
	if got := describeCounts(counts); got != "m1=2 m2=2 m3=2" {
		t.Errorf("6 concurrent launches with spread member landed %s, want 2 on each member (LXD itself piles them up: 1/4/1 was seen without placement)", got)
	}

	// The records follow LXD (the instances lease's location keeper): the shape's
	// placement status and the metrics per member say what LXD says.
	waitUntil(t, "the shape's placement status to match LXD", 20*time.Second, func() bool {
		shape, _, err := e.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		return shape.PlacementStatus != nil && describeCounts(shape.PlacementStatus.Domains) == describeCounts(counts)
	}, every(200*time.Millisecond))
	metrics := scrape(t, e.admin)
	if v := sample(metrics, `lxd_deployd_lxd_cluster_member_online{member="m2"}`); v != 1 {
		t.Errorf("lxd_cluster_member_online for m2 is %v before the kill, want 1", v)
	}

	for member, n := range counts {
		series := fmt.Sprintf(`lxd_deployd_shape_instances_member{deployment="dep1",member="%s",project="default",shape="web",state="reachable"}`, member)
		if v := sample(metrics, series); v != float64(n) {
			t.Errorf("%s is %v, want %d", series, v, n)
		}
	}

	t.Run("group target", func(t *testing.T) {
		gpu := webShape("gpu", 0, 2)
		gpu.Placement = &api.DeploymentShapePlacement{Targets: []string{"@gpu"}}
		must(t, e.admin.CreateDeploymentShape("dep1", gpu))
		e.launch(t, "gpu", e.prefix+"g0", e.prefix+"g1")
		if got := describeCounts(e.perMember(t, "gpu")); got != "m3=2" {
			t.Errorf("a shape targeting @gpu (m3 alone) landed %s", got)
		}
	})

	t.Run("member loss", func(t *testing.T) {
		onM2 := 0
		for _, inst := range must2(e.admin.GetDeploymentShapeInstances("dep1", "web"))(t) {
			if inst.Location == "m2" {
				onM2++
			}
		}

		m2 := e.lxd.Member(t, "m2")
		m2.Kill(t)
		killed := time.Now()
		unreachable := func() int {
			n := 0
			for _, inst := range must2(e.admin.GetDeploymentShapeInstances("dep1", "web"))(t) {
				if inst.Status == api.InstanceStatusUnreachable {
					if inst.Location != "m2" {
						t.Errorf("instance %s on %s is unreachable, but only m2 was killed", inst.Name, inst.Location)
					}

					n++
				}
			}

			return n
		}

		waitUntil(t, "m2's instances to show Unreachable", 60*time.Second, func() bool { return unreachable() == onM2 && onM2 > 0 }, every(200*time.Millisecond))
		t.Logf("m2's %d instances Unreachable %v after SIGKILL (cluster.offline_threshold 11s)", onM2, time.Since(killed))
		metrics := scrape(t, e.admin)
		if v := sample(metrics, `lxd_deployd_lxd_cluster_member_online{member="m2"}`); v != 0 {
			t.Errorf("lxd_cluster_member_online for m2 is %v while it is offline, want 0", v)
		}

		series := `lxd_deployd_shape_instances_member{deployment="dep1",member="m2",project="default",shape="web",state="unreachable"}`
		if v := sample(metrics, series); v != float64(onM2) {
			t.Errorf("%s is %v, want %d", series, v, onM2)
		}

		shape, _, err := e.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		if shape.PlacementStatus == nil || shape.PlacementStatus.Unreachable != onM2 {
			t.Errorf("placement status %+v while m2 is offline, want %d unreachable", shape.PlacementStatus, onM2)
		}

		// The loss is in the activity log (and on /1.0/events, the same path) once per
		// instance, not once per poll: the keeper reports changes only.
		reach := func(action string) map[string]int {
			seen := map[string]int{}
			for _, entry := range must2(e.admin.GetDeploymentActivity("dep1", 0, "web"))(t) {
				if entry.Action == action {
					if entry.Who != "lxd-cluster" || !strings.Contains(entry.Why, "LXD member m2") {
						t.Errorf("activity %s by %s: %q, want lxd-cluster's, naming m2", entry.Action, entry.Who, entry.Why)
					}

					seen[strings.Fields(entry.Why)[1]]++
				}
			}

			return seen
		}

		waitUntil(t, "an instance-unreachable activity entry for each of m2's instances", 20*time.Second, func() bool { return len(reach("instance-unreachable")) == onM2 }, every(200*time.Millisecond))
		time.Sleep(5 * time.Second) // a few more keeper rounds (2 s) with m2 still offline
		for name, n := range reach("instance-unreachable") {
			if n != 1 {
				t.Errorf("instance %s has %d instance-unreachable entries while m2 stayed offline, want 1", name, n)
			}
		}

		m2.Restart(t)
		restarted := time.Now()
		waitUntil(t, "m2's instances to be reachable again", 60*time.Second, func() bool { return unreachable() == 0 }, every(200*time.Millisecond))
		t.Logf("m2's instances reachable %v after its LXD restarted", time.Since(restarted))
		waitUntil(t, "an instance-reachable activity entry for each of m2's instances", 20*time.Second, func() bool { return len(reach("instance-reachable")) == onM2 }, every(200*time.Millisecond))
		unreached, reached := reach("instance-unreachable"), reach("instance-reachable")
		for name := range unreached {
			if reached[name] != 1 || unreached[name] != 1 {
				t.Errorf("instance %s: %d instance-unreachable and %d instance-reachable entries, want one each", name, unreached[name], reached[name])
			}
		}
		for _, inst := range must2(e.admin.GetDeploymentShapeInstances("dep1", "web"))(t) {
			if inst.Status != "Running" {
				t.Logf("LXD says: m1 %s, m2 %s, m3 %s", e.lxd.MemberStatus(t, "m1"), e.lxd.MemberStatus(t, "m2"), e.lxd.MemberStatus(t, "m3"))
				t.Errorf("instance %s on %s is %s after m2 returned, want Running (containers outlive their LXD)", inst.Name, inst.Location, inst.Status)
			}
		}
	})

	// The reference governor's scale-in order (shared/policy) takes from the fullest
	// member: 2/2/2 to 3 leaves 1/1/1, where newest-first alone would empty a member.
	t.Run("scale-in keeps the spread", func(t *testing.T) {
		instances := must2(e.admin.GetDeploymentShapeInstances("dep1", "web"))(t)
		for _, name := range policy.ScaleDownOrder(instances, 3) {
			op, err := e.admin.DeleteDeploymentShapeInstance("dep1", "web", name)
			must(t, err)
			must(t, op.Wait(context.Background()))
		}

		if got := describeCounts(e.perMember(t, "web")); got != "m1=1 m2=1 m3=1" {
			t.Errorf("scaling 6 to 3 left %s, want 1/1/1", got)
		}
	})
}

// must2 unwraps a value and an error, failing the test on the error.
func must2[T any](v T, err error) func(t testing.TB) T {
	return func(t testing.TB) T {
		t.Helper()
		must(t, err)
		return v
	}
}

// describeCounts prints the non-zero counts per member in member order.
func describeCounts(counts map[string]int) string {
	keys := make([]string, 0, len(counts))
	for k, n := range counts {
		if n != 0 {
			keys = append(keys, k)
		}
	}

	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, counts[k]))
	}

	return strings.Join(parts, " ")
}
