package test

import (
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestAutohealingHolds: 3 of 4 instances failing their check at once are not replaced
// (their init processes in LXD unchanged): autohealing holds, and the shape's
// health_status, the CLI, /1.0/events, the governor's webhook, the activity log and the
// metrics say so and why. When the instances recover the hold lifts by itself, and then
// one failing instance alone is replaced, as before.
func TestAutohealingHolds(t *testing.T) {
	env := newGovernorEnv(t, 0, 4)
	hook := env.hookTo(t)
	env.setShape(t, func(put *api.DeploymentShapePut) { put.Health = sickFileHealth() })
	names := env.scaleTo(t, 4)
	allHealthy := func() bool {
		byName := env.instancesByName(t)
		for _, name := range names {
			if byName[name].Health != api.HealthHealthy {
				return false
			}
		}

		return len(byName) == len(names)
	}

	env.waitUntil(t, "4 healthy instances", 60*time.Second, allHealthy)
	pids := initPIDs(t, env, names)
	for _, name := range names[:3] {
		env.exec(t, name, "touch", "/tmp/sick")
	}

	hook.waitFor("autohealing held", 30*time.Second, lifecycleEvent("deployment-shape-autohealing-held", ""))
	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	hs := shape.HealthStatus
	if hs == nil || hs.Autohealing != api.AutohealingHeld || !strings.Contains(hs.AutohealingReason, "of 4 instances are unhealthy") || hs.Since == nil {
		t.Fatalf("the shape must say autohealing holds and why: %+v", hs)
	}

	// Several autohealing rounds (every 2 s) replace nothing.
	env.waitUntil(t, "3 unhealthy instances", 30*time.Second, func() bool {
		unhealthy := 0
		for _, i := range env.instancesByName(t) {
			if i.Health == api.HealthUnhealthy {
				unhealthy++
			}
		}

		return unhealthy == 3
	})

	time.Sleep(6 * time.Second)
	requireSamePIDs(t, env, pids, "while autohealing holds")

	u := newCLIUser(t, env.d)
	if out := u.ok("deployment", "shape", "health", "dep1", "web"); !contains(out, "| unhealthy", "Autohealing: held since", "of 4 instances are unhealthy") {
		t.Errorf("shape health must say autohealing holds:\n%s", out)
	}

	text := scrape(t, env.admin)
	if sample(text, `lxd_deployd_shape_autohealing_held{deployment="dep1",project="default",shape="web"}`) != 1 {
		t.Errorf("the metrics must say autohealing holds:\n%s", text)
	}

	activity := must2(env.admin.GetDeploymentActivity("dep1", 0, "web"))(t)
	if !hasActivity(activity, "autohealing-held", "autoheal") {
		t.Errorf("the activity log must record the hold: %+v", activity)
	}

	// The instances recover: the hold lifts by itself.
	for _, name := range names[:3] {
		env.exec(t, name, "rm", "/tmp/sick")
	}

	hook.waitFor("autohealing resumed", 30*time.Second, lifecycleEvent("deployment-shape-autohealing-resumed", ""))
	env.waitUntil(t, "4 healthy instances again", 30*time.Second, allHealthy)
	shape, _, err = env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if shape.HealthStatus.Autohealing != api.AutohealingActive || shape.HealthStatus.AutohealingReason != "" {
		t.Fatalf("after the instances recovered: %+v", shape.HealthStatus)
	}

	requireSamePIDs(t, env, pids, "after the hold")
	if !hasActivity(must2(env.admin.GetDeploymentActivity("dep1", 0, "web"))(t), "autohealing-resumed", "autoheal") {
		t.Errorf("the activity log must record the end of the hold")
	}

	// One instance alone failing is a real failure: replaced within its thresholds.
	env.exec(t, names[0], "touch", "/tmp/sick")
	env.waitUntil(t, "the one failing instance replaced", 60*time.Second, func() bool {
		byName := env.instancesByName(t)
		_, old := byName[names[0]]
		return !old && healthyReplacement(byName, names[0]) != ""
	})

	requireSamePIDs(t, env, map[string]int64{names[1]: pids[names[1]], names[2]: pids[names[2]], names[3]: pids[names[3]]}, "after one instance was replaced")
}

// initPIDs reads each instance's init process id from LXD: a replaced or restarted
// instance has another.
func initPIDs(t testing.TB, env *governorEnv, names []string) map[string]int64 {
	t.Helper()
	pids := map[string]int64{}
	for _, name := range names {
		state, _, err := env.lxdConn.GetInstanceState(name)
		must(t, err)
		if state.Pid == 0 {
			t.Fatalf("%s has no init process in LXD: %+v", name, state.Status)
		}

		pids[name] = state.Pid
	}

	return pids
}

// requireSamePIDs fails unless LXD still runs each instance with the same init process.
func requireSamePIDs(t testing.TB, env *governorEnv, want map[string]int64, when string) {
	t.Helper()
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}

	live := env.lxdInstances(t)
	for _, name := range names {
		if _, ok := live[name]; !ok {
			t.Fatalf("%s: %s is gone from LXD", when, name)
		}
	}

	got := initPIDs(t, env, names)
	for name, pid := range want {
		if got[name] != pid {
			t.Fatalf("%s: %s runs another init process (%d, was %d): it was replaced or restarted", when, name, got[name], pid)
		}
	}
}

// hasActivity says whether the log holds an entry of the action by who.
func hasActivity(entries []api.DeploymentActivity, action string, who string) bool {
	for _, e := range entries {
		if e.Action == action && e.Who == who {
			return true
		}
	}

	return false
}
