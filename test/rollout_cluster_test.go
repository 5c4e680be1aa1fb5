package test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// TestRolloutTakenOverAfterKill runs a rollout in a cluster and SIGKILLs the member working
// on it in the middle of a launch: another member takes the rollout over once the dead
// member's claim expires and finishes it. No instance twice, nothing left in LXD that no
// record names, one rollout, and the shape's bounds (maximum, max_unavailable 0) held
// throughout. Three members, because dqlite needs a quorum of its voters to write after
// one dies; two of them are left to finish.
func TestRolloutTakenOverAfterKill(t *testing.T) {
	const size, maximum = 3, 4
	private := lxdtest.Shared(t)
	m1, m2, m3 := threeMembers(t, private.Socket, "--reconcile-interval", "1s")
	members := map[string]*daemon{"m1": m1, "m2": m2, "m3": m3}
	for _, m := range members {
		waitLXDOnline(t, m)
	}

	env := &governorEnv{d: m1, lxd: private, lxdConn: private.Client(t), admin: m1.Unix(t), prefix: "trolloutclusterkill"}
	t.Cleanup(func() {
		// By then env.admin is a member that lives.
		_ = env.admin.DeleteDeploymentShape("dep1", "web", true)
		env.cleanupRollouts(t)
		env.cleanupLXD(t)
	})

	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(t, env.admin.CreateDeploymentShape("dep1", webShape("web", 0, maximum)))
	env.gov = env.governor(t, "dep1", "gov", "admin")
	env.scaleTo(t, size)
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		setVersion("2")(put)
		put.Rollout = api.DeploymentShapeRollout{MaxSurge: "1", MaxUnavailable: "0", MinReady: "1s"}
	})

	// Bounds, sampled through whichever member answers.
	clients := map[string]*client.Server{}
	for name, m := range members {
		clients[name] = m.Unix(t)
	}

	stopSampling := startSamplingInstanceBounds(t, func() ([]api.DeploymentInstance, error) {
		err := errors.New("no member answered")
		for _, c := range clients {
			var instances []api.DeploymentInstance
			instances, err = c.GetDeploymentShapeInstances("dep1", "web")
			if err == nil {
				return instances, nil
			}
		}

		return nil, err
	})

	_, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)

	// Once one instance is replaced, the member launching the next is the rollout's: kill it
	// in the middle of that launch.
	var victim string
	var current *api.DeploymentRollout
	waitUntil(t, "a second replacement launched", 60*time.Second, func() bool {
		var err error
		current, err = env.admin.GetDeploymentShapeRollout("dep1", "web", 1)
		must(t, err)
		if current.Status != api.RolloutRunning {
			t.Fatalf("the rollout ended before a member could be killed: %+v", current)
		}

		ops, err := env.admin.GetOperations()
		must(t, err)
		for _, op := range ops {
			if current.Updated >= 1 && op.StatusCode == lxdapi.Running && strings.HasPrefix(op.Description, "Creating instance web-r2-") {
				victim = op.Location
			}
		}

		return victim != ""
	}, every(20*time.Millisecond), showing(func() string { return fmt.Sprintf("%+v", current) }))

	if members[victim] == nil {
		t.Fatalf("the launch runs on %q, not a member", victim)
	}

	members[victim].Kill(t) // the sampler's calls to it fail from now on, and are skipped
	for name, m := range members {
		if name != victim {
			env.d, env.admin = m, m.Unix(t)
			break
		}
	}

	t.Logf("killed %s, the member running the rollout", victim)
	r := env.waitRollout(t, 1, 90*time.Second, "complete", "failed", "reverted", "cancelled")
	bounds := stopSampling()
	if r.Status != "complete" {
		t.Fatalf("the rollout did not complete after the takeover: %+v", r)
	}

	t.Logf("rollout taken over: fewest ready %d, most instances %d over %d samples", bounds.fewest, bounds.most, bounds.samples)
	if bounds.fewest < size || bounds.most > maximum {
		t.Fatalf("during the rollout: fewest ready %d (want >= %d), most instances %d (want <= %d)", bounds.fewest, size, bounds.most, maximum)
	}

	rollouts, err := env.admin.GetDeploymentShapeRollouts("dep1", "web")
	must(t, err)
	if len(rollouts) != 1 {
		t.Fatalf("one rollout, taken over, not another: %+v", rollouts)
	}

	// Settled: no record in flux, the records and LXD name the same instances, all at v2.
	env.waitSettled(t, size, 30*time.Second, "takeover")

	for name, v := range env.versions(t) {
		if v != "2" || !strings.HasPrefix(name, "web-r2-") {
			t.Fatalf("after the takeover, %s runs %q", name, v)
		}
	}
}
