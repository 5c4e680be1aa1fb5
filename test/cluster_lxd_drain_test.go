package test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// boundsSampler watches a shape from both sides every 200 ms: how many instances LXD lists
// (its own listing) and how many the API says are ready (created, Running, healthy).
type boundsSampler struct {
	mu       sync.Mutex
	maxInLXD int
	minReady int
	samples  int
}

func (e *clusterEnv) sampleBounds(t *testing.T, shape string) (*boundsSampler, func()) {
	s := &boundsSampler{minReady: 1 << 30}
	cl := e.lxd.Client(t)
	stop := sampleEvery(t, 200*time.Millisecond, func() {
		insts, err1 := cl.GetInstances(lxdapi.InstanceTypeAny)
		listed, err2 := e.admin.GetDeploymentShapeInstances("dep1", shape)
		if err1 == nil && err2 == nil {
			inLXD := len(insts) // the cluster is the test's own: one shape
			ready := 0
			for _, inst := range listed {
				if inst.State == "created" && inst.Status == "Running" && inst.Health == api.HealthHealthy {
					ready++
				}
			}

			s.mu.Lock()
			s.samples++
			s.maxInLXD = max(s.maxInLXD, inLXD)
			s.minReady = min(s.minReady, ready)
			s.mu.Unlock()
		}
	})

	return s, stop
}

// TestLXDClusterDrainAndRebalance drains an LXD member under a shape of 6 at its maximum
// (minimum 4, spread 2/2/2): every instance leaves it, while LXD never lists more than 6
// and the API never shows fewer than 5 ready (the minimum is 4); then a rebalance spreads the shape 2/2/2
// again once the member takes instances.
func TestLXDClusterDrainAndRebalance(t *testing.T) {
	e := newClusterEnv(t, nil)
	// A shape name of its own: a rollout names its instances after the shape, and every
	// LXD's containers share the host's cgroup tree.
	shapeName := "pcweb" + strings.TrimSuffix(strings.TrimPrefix(e.prefix, "pc-"), "-")
	web := webShape(shapeName, 4, 6)
	web.Placement = &api.DeploymentShapePlacement{Spread: api.PlacementSpreadMember}
	web.Health = sickFileHealth()
	must(t, e.admin.CreateDeploymentShape("dep1", web))
	var names []string
	for i := range 6 {
		names = append(names, fmt.Sprintf("%s%d", e.prefix, i))
	}

	e.launch(t, shapeName, names...)
	allHealthy := func() bool {
		for _, inst := range must2(e.admin.GetDeploymentShapeInstances("dep1", shapeName))(t) {
			if inst.Health != api.HealthHealthy || inst.State != "created" {
				return false
			}
		}

		return true
	}

	waitUntil(t, "every instance healthy", 30*time.Second, allHealthy, every(200*time.Millisecond))
	if got := describeCounts(e.perMember(t, shapeName)); got != "m1=2 m2=2 m3=2" {
		t.Fatalf("6 launches landed %s, want 2/2/2", got)
	}

	sampler, stop := e.sampleBounds(t, shapeName)
	start := time.Now()
	op, err := e.admin.DrainLXDMember("m3")
	must(t, err)
	must(t, op.Wait(context.Background()))
	t.Logf("drain of m3 took %v (operation metadata %v)", time.Since(start), op.Metadata)
	if got := describeCounts(e.perMember(t, shapeName)); got != "m1=3 m2=3" {
		t.Errorf("after draining m3 the shape is %s, want m1=3 m2=3", got)
	}

	for _, member := range e.lxd.Locations(t, "") {
		if member == "m3" {
			t.Errorf("LXD still has an instance of the shape on m3 after the drain")
		}
	}

	waitUntil(t, "every instance healthy after the drain", 30*time.Second, allHealthy, every(200*time.Millisecond))
	start = time.Now()
	op, err = e.admin.RebalanceDeploymentShape("dep1", shapeName)
	must(t, err)
	must(t, op.Wait(context.Background()))
	t.Logf("rebalance took %v", time.Since(start))
	if got := describeCounts(e.perMember(t, shapeName)); got != "m1=2 m2=2 m3=2" {
		t.Errorf("after the rebalance the shape is %s, want 2/2/2", got)
	}

	// Every move is the operator's (the requestor of the drain and of the rebalance, here
	// the admin on the unix socket), with its cause: not autohealing's.
	drained, rebalanced := 0, 0
	for _, entry := range must2(e.admin.GetDeploymentActivity("dep1", 0, shapeName))(t) {
		if entry.Action != "replace" {
			continue
		}

		t.Logf("activity: %s by %s (%s): %s", entry.Action, entry.Who, entry.Requestor.Protocol, entry.Why)
		switch {
		case entry.Who != "admin":
			t.Errorf("move %q is recorded as %s's, want the admin who asked for it", entry.Why, entry.Who)
		case strings.Contains(entry.Why, "drain of LXD member m3"):
			drained++
		case strings.Contains(entry.Why, "rebalance of shape "+shapeName):
			rebalanced++
		default:
			t.Errorf("move %q does not say it is a drain's or a rebalance's", entry.Why)
		}
	}

	if drained != 2 || rebalanced != 2 {
		t.Errorf("the activity log has %d moves for the drain of m3 and %d for the rebalance, want 2 and 2", drained, rebalanced)
	}

	stop()
	sampler.mu.Lock()
	defer sampler.mu.Unlock()
	t.Logf("over %d samples: at most %d instances in LXD, at least %d ready", sampler.samples, sampler.maxInLXD, sampler.minReady)
	if sampler.maxInLXD > 6 {
		t.Errorf("LXD listed %d instances of the shape: above its maximum (6)", sampler.maxInLXD)
	}

	// One move at a time, each waiting for the last replacement to be ready: one
	// instance out of service at most (health.max_unavailable 1), never below the minimum.
	if sampler.minReady < 5 {
		t.Errorf("only %d instances were ready at one point: more than one out of service (minimum 4, max_unavailable 1)", sampler.minReady)
	}

	// A rolling rollout launches each new instance on the emptiest member and removes an
	// outdated one from the fullest: the shape stays 2/2/2.
	t.Run("rollout keeps the spread", func(t *testing.T) {
		shape, etag, err := e.admin.GetDeploymentShape("dep1", shapeName)
		must(t, err)
		put := shape.Writable()
		put.ScalingMaximum = 7
		setVersion("2")(&put)
		must(t, e.admin.UpdateDeploymentShape("dep1", shapeName, put, etag))
		op, err := e.admin.CreateDeploymentShapeRollout("dep1", shapeName, api.DeploymentRolloutsPost{})
		must(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		start := time.Now()
		must(t, op.Wait(ctx))
		t.Logf("rollout took %v", time.Since(start))
		for _, inst := range must2(e.admin.GetDeploymentShapeInstances("dep1", shapeName))(t) {
			if inst.Outdated {
				t.Errorf("instance %s is still outdated after the rollout", inst.Name)
			}
		}

		if got := describeCounts(e.perMember(t, shapeName)); got != "m1=2 m2=2 m3=2" {
			t.Errorf("after the rollout the shape is %s, want 2/2/2", got)
		}
	})
}
