package test

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// waitSettled waits until shape web is settled after a rollout that was interrupted: no
// record in flux (each created, current, running), size of them, and the records and LXD
// name the same instances. Until timeout; after names the interruption in the failure.
func (env *governorEnv) waitSettled(t testing.TB, size int, timeout time.Duration, after string) {
	t.Helper()
	var rows, live []string
	settled := true
	env.waitUntil(t, "settled after the "+after, timeout, func() bool {
		instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
		must(t, err)
		rows, settled = nil, true
		for _, i := range instances {
			rows = append(rows, i.Name)
			settled = settled && i.State == "created" && !i.Outdated && i.Status == "Running"
		}

		sort.Strings(rows)
		live = nil
		all, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
		must(t, err)
		for _, i := range all {
			if i.Config["user.lxd-deployd.deployment"] == "dep1" && (strings.HasPrefix(i.Name, "web-r") || strings.HasPrefix(i.Name, env.prefix+"-")) {
				live = append(live, i.Name)
			}
		}

		sort.Strings(live)
		return settled && len(rows) == size && strings.Join(rows, ",") == strings.Join(live, ",")
	}, showing(func() string { return fmt.Sprintf("records %v (settled %v), LXD %v", rows, settled, live) }))
}

// waitRollout waits until rollout n of web is in one of the statuses.
func (env *governorEnv) waitRollout(t testing.TB, n int, timeout time.Duration, statuses ...string) *api.DeploymentRollout {
	t.Helper()
	var r *api.DeploymentRollout
	var err error
	env.waitUntil(t, fmt.Sprintf("rollout %d %v", n, statuses), timeout, func() bool {
		r, err = env.admin.GetDeploymentShapeRollout("dep1", "web", n)
		return err == nil && slices.Contains(statuses, r.Status)
	}, showing(func() string { return fmt.Sprintf("it is %+v (err %v)", r, err) }))
	return r
}

// waitFirstReplacement waits until rollout n of web has made its first replacement, for
// tests that act on a rollout caught half way (pause it, kill the daemon).
func (env *governorEnv) waitFirstReplacement(t testing.TB, n int) {
	t.Helper()
	var r *api.DeploymentRollout
	waitUntil(t, "a replacement started", time.Minute, func() bool {
		var err error
		r, err = env.admin.GetDeploymentShapeRollout("dep1", "web", n)
		must(t, err)
		return r.Updated >= 1
	}, every(50*time.Millisecond), showing(func() string { return fmt.Sprintf("%+v", r) }))
}

// versions returns the user.version each of the shape's LXD instances runs with, and
// checks that the records say they are current.
func (env *governorEnv) versions(t testing.TB) map[string]string {
	t.Helper()
	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	out := map[string]string{}
	for _, i := range instances {
		live, _, err := env.lxdConn.GetInstance(i.Name)
		must(t, err)
		out[i.Name] = live.Config["user.version"]
		if i.Outdated {
			out[i.Name] += " (outdated)"
		}
	}

	return out
}

// boundsSeen is what a bounds sampler saw: the fewest ready instances, the most counted
// ones and how many samples it took.
type boundsSeen struct{ fewest, most, samples int }

// startSamplingBounds samples the shape's instances in the background until the function
// it returns is called; that function returns what it saw.
func (env *governorEnv) startSamplingBounds(t testing.TB) (stop func() boundsSeen) {
	return startSamplingInstanceBounds(t, func() ([]api.DeploymentInstance, error) {
		return env.admin.GetDeploymentShapeInstances("dep1", "web")
	})
}

// startSamplingInstanceBounds reads the instances every 100 ms (with sampleEvery; a read
// that fails is no sample) until the function it returns is called; that function returns
// the fewest ready (created and Running) and the most counted (creating or created) it saw.
func startSamplingInstanceBounds(t testing.TB, read func() ([]api.DeploymentInstance, error)) (stop func() boundsSeen) {
	seen := boundsSeen{fewest: 1 << 30}
	stopSampling := sampleEvery(t, 100*time.Millisecond, func() {
		instances, err := read()
		if err != nil {
			return
		}

		ready, counted := 0, 0
		for _, i := range instances {
			if i.State == "created" && i.Status == "Running" {
				ready++
			}

			if i.State == "created" || i.State == "creating" {
				counted++
			}
		}

		seen = boundsSeen{fewest: min(seen.fewest, ready), most: max(seen.most, counted), samples: seen.samples + 1}
	})

	return func() boundsSeen {
		stopSampling()
		return seen
	}
}
