package test

import (
	"fmt"
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
