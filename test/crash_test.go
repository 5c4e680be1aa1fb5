package test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// TestCrashDuringLaunches kills the daemon with SIGKILL while launches are in flight and
// restarts it: after reconcile, the database and LXD must agree, with no instance lost,
// duplicated, or left without a record.
func TestCrashDuringLaunches(t *testing.T) {
	t.Parallel()
	const max = 5
	env := newGovernorEnv(t, 0, max, "--reconcile-interval", "1s")

	for i := 0; i < max; i++ {
		_, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", env.name(fmt.Sprintf("c%d", i)))
		must(t, err)
	}

	env.d.Kill(t)
	env.d.Start(t, "--reconcile-interval", "1s")

	var rows, liveNames []string
	var states string
	var live map[string]lxdapi.Instance
	env.waitUntil(t, "records and LXD converged", 90*time.Second, func() bool {
		rows, states = env.rowStates(t)
		live = env.lxdInstances(t)
		liveNames = make([]string, 0, len(live))
		for name := range live {
			liveNames = append(liveNames, name)
		}

		sort.Strings(liveNames)
		settled := !strings.Contains(states, "creating") && !strings.Contains(states, "deleting")
		return settled && strings.Join(rows, ",") == strings.Join(liveNames, ",")
	}, showing(func() string { return fmt.Sprintf("records %v (%s), LXD %v", rows, states, liveNames) }))
	if len(rows) > max {
		t.Fatalf("%d instances exceed the maximum %d", len(rows), max)
	}

	for name, instance := range live {
		if instance.Status != "Running" {
			t.Fatalf("adopted instance %s is %s: a launch promises a started instance", name, instance.Status)
		}
	}

	t.Logf("after the crash: %d of %d launches survived, records and LXD agree (%s)", len(rows), max, states)

	// The survivors are ordinary instances: the governor can delete them.
	rows, _ = env.rowStates(t)
	for _, name := range rows {
		env.remove(t, env.gov, name)
	}

	if left := env.lxdInstances(t); len(left) != 0 {
		t.Fatalf("instances left in LXD: %v", left)
	}
}
