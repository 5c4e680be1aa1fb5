package test

import (
	"sort"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// waitSettled waits until shape web is settled after a rollout that was interrupted: no
// record in flux (each created, current, running), size of them, and the records and LXD
// name the same instances. Until timeout; after names the interruption in the failure.
func (env *governorEnv) waitSettled(t testing.TB, size int, timeout time.Duration, after string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
		must(t, err)
		var rows []string
		settled := true
		for _, i := range instances {
			rows = append(rows, i.Name)
			settled = settled && i.State == "created" && !i.Outdated && i.Status == "Running"
		}

		sort.Strings(rows)
		var live []string
		all, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
		must(t, err)
		for _, i := range all {
			if i.Config["user.lxd-deployd.deployment"] == "dep1" && (strings.HasPrefix(i.Name, "web-r") || strings.HasPrefix(i.Name, env.prefix+"-")) {
				live = append(live, i.Name)
			}
		}

		sort.Strings(live)
		if settled && len(rows) == size && strings.Join(rows, ",") == strings.Join(live, ",") {
			return
		}

		if time.Now().After(deadline) {
			t.Fatalf("after the %s: records %v (settled %v), LXD %v\n%s", after, rows, settled, live, env.d.Log())
		}

		time.Sleep(250 * time.Millisecond)
	}
}
