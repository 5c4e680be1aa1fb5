package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestResizeInPlace is issue 22's scenario (doc/api.md, "Resizing"): a shape with memory
// bounds 64MiB..512MiB and two running instances is resized to 256MiB live (LXD's config
// says so, the init PIDs are unchanged, the revision has cause resize, nothing is
// outdated, a new launch gets 256MiB); a resize past the maximum is a 409 naming it, a
// read-only key gets a 403; an instance holding 100MiB is not shrunk to 64MiB (it keeps its
// limit, the reason is reported, its cgroup saw no OOM kill) while the others are; once it
// frees the memory, the fleet's in-place pass shrinks it without another resize. The
// issue says `head -c 100M`; busybox head takes no suffix, so dd writes the same 100MiB.
func TestResizeInPlace(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 5)
	env.prefix = "rz-inplace" // cleanupLXD removes what carries it
	var mu sync.Mutex
	var events []lxdapi.EventLifecycle
	env.d.onLifecycle(t, "rz-events", func(e lxdapi.EventLifecycle) {
		mu.Lock()
		events = append(events, e)
		mu.Unlock()
	})

	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Config = map[string]string{"limits.memory": "128MiB", "limits.cpu": "1"}
		put.ResourceBounds = map[string]api.DeploymentShapeResourceBound{
			api.LimitMemory: {Minimum: "64MiB", Maximum: "512MiB"},
			api.LimitCPU:    {Minimum: "1", Maximum: "2"},
		}
	})

	names := []string{env.name("a"), env.name("b")}
	for _, name := range names {
		env.launch(t, env.gov, name)
	}

	pids := map[string]int64{}
	for _, name := range names {
		pids[name] = lxdPid(t, env, name)
	}

	lxdMemory := func(name string) string {
		inst, _, err := env.lxdConn.GetInstance(name)
		must(t, err)
		return inst.Config["limits.memory"]
	}

	resize := func(memory string, reason string) map[string]api.DeploymentResizeResult {
		t.Helper()
		started := time.Now()
		op, err := env.gov.ResizeDeploymentShape("dep1", "web", api.DeploymentShapeResourcesPut{Memory: memory, Reason: reason})
		must(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		must(t, op.Wait(ctx))
		t.Logf("resize to %s took %s", memory, time.Since(started).Round(time.Millisecond))
		var meta struct {
			Instances map[string]api.DeploymentResizeResult `json:"instances"`
		}

		data, err := json.Marshal(op.Metadata)
		must(t, err)
		must(t, json.Unmarshal(data, &meta))
		return meta.Instances
	}

	t.Run("grow live", func(t *testing.T) {
		results := resize("256MiB", "memory utilisation 90%")
		for _, name := range names {
			if results[name].Result != api.ResizeApplied {
				t.Fatalf("%s: %+v, want applied", name, results)
			}

			if got := lxdMemory(name); got != "256MiB" {
				t.Fatalf("LXD has limits.memory %q on %s, want 256MiB", got, name)
			}

			if pid := lxdPid(t, env, name); pid != pids[name] {
				t.Fatalf("%s restarted: init PID %d, was %d", name, pid, pids[name])
			}
		}

		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		revision, err := env.admin.GetDeploymentShapeRevision("dep1", "web", shape.Revision)
		must(t, err)
		if revision.Cause != "resize" || revision.Notes != "memory utilisation 90%" || revision.Requestor.Key != "gov" || revision.Shape.InstanceTemplate.Config["limits.memory"] != "256MiB" {
			t.Fatalf("revision %d: cause %q notes %q requestor %+v template %v", revision.Revision, revision.Cause, revision.Notes, revision.Requestor, revision.Shape.InstanceTemplate.Config)
		}

		// Governors see the limits and what the instances use (recursion=1, from LXD's
		// /1.0/metrics). LXD caches its metrics by time only (8 s in 5.0, 15 s later): an
		// instance started since the last fetch (another test's, on the shared LXD) has no
		// usage until the cache expires, so the usage is waited for, the limits are not.
		for name, instance := range env.instancesByName(t) {
			if instance.Outdated || instance.Limits["limits.memory"] != "256MiB" {
				t.Fatalf("%s: outdated %v, limits %v", name, instance.Outdated, instance.Limits)
			}
		}

		var usage map[string]*api.DeploymentInstanceUsage
		waitUntil(t, "every instance's usage from LXD's metrics", 40*time.Second, func() bool {
			usage = map[string]*api.DeploymentInstanceUsage{}
			for name, instance := range env.instancesByName(t) {
				usage[name] = instance.Usage
				if instance.Usage == nil || instance.Usage.MemoryUsageBytes <= 0 || instance.Usage.MemoryLimitBytes <= 0 {
					return false
				}
			}

			return true
		}, every(2*time.Second), showing(func() string {
			var shown []string
			for name, u := range usage {
				shown = append(shown, fmt.Sprintf("%s: %+v", name, u))
			}

			return strings.Join(shown, "; ")
		}))
		for name, u := range usage {
			t.Logf("%s: usage %+v", name, *u)
		}

		// A new launch gets the new size at once.
		c := env.name("c")
		env.launch(t, env.gov, c)
		names = append(names, c)
		pids[c] = lxdPid(t, env, c)
		if got := lxdMemory(c); got != "256MiB" {
			t.Fatalf("a new launch has limits.memory %q, want 256MiB", got)
		}

		// Resized in place, the first two now match the template a new launch comes from.
		instances := env.instancesByName(t)
		for _, name := range names[:2] {
			if instances[name].TemplateHash != instances[c].TemplateHash {
				t.Fatalf("%s has template hash %s, a new launch %s", name, instances[name].TemplateHash, instances[c].TemplateHash)
			}
		}
	})

	t.Run("refused", func(t *testing.T) {
		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		_, err = env.gov.ResizeDeploymentShape("dep1", "web", api.DeploymentShapeResourcesPut{Memory: "1GiB"})
		if !lxdapi.StatusErrorCheck(err, http.StatusConflict) || !strings.Contains(err.Error(), "maximum (512MiB)") || !strings.Contains(err.Error(), "limits.memory") {
			t.Fatalf("a resize to 1GiB: %v, want a 409 naming the maximum and the knob", err)
		}

		_, err = env.readOnly.ResizeDeploymentShape("dep1", "web", api.DeploymentShapeResourcesPut{Memory: "128MiB"})
		if !lxdapi.StatusErrorCheck(err, http.StatusForbidden) {
			t.Fatalf("a read-only key's resize: %v, want a 403", err)
		}

		after, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		if after.Revision != shape.Revision || after.InstanceTemplate.Config["limits.memory"] != "256MiB" {
			t.Fatalf("a refused resize changed the shape: revision %d -> %d, template %v", shape.Revision, after.Revision, after.InstanceTemplate.Config)
		}
	})

	t.Run("safe shrink", func(t *testing.T) {
		full := names[0]
		code, _, stderr := env.exec(t, full, "sh", "-c", "mkdir -p /dev/shm && (grep -q ' /dev/shm ' /proc/mounts || mount -t tmpfs shm /dev/shm) && dd if=/dev/zero of=/dev/shm/x bs=1048576 count=100")
		if code != 0 {
			t.Fatalf("fill /dev/shm in %s: exit %d: %s", full, code, stderr)
		}

		results := resize("64MiB", "idle")
		if r := results[full]; r.Result != api.ResizeRefused || !strings.Contains(r.Reason, "above the new limit 64MiB") {
			t.Fatalf("%s holds 100MiB: %+v, want refused with the reason", full, r)
		}

		for _, name := range names[1:] {
			if results[name].Result != api.ResizeApplied || lxdMemory(name) != "64MiB" {
				t.Fatalf("%s: %+v, LXD has %q, want 64MiB applied", name, results[name], lxdMemory(name))
			}
		}

		if got := lxdMemory(full); got != "256MiB" {
			t.Fatalf("LXD has limits.memory %q on %s, want it left at 256MiB", got, full)
		}

		instances := env.instancesByName(t)
		if !instances[full].Outdated || instances[names[1]].Outdated {
			t.Fatalf("want only %s outdated: %+v", full, instances)
		}

		activity, err := env.admin.GetDeploymentActivity("dep1", 0, "web")
		must(t, err)
		found := false
		for _, a := range activity {
			found = found || a.Action == "resize-refused" && strings.HasPrefix(a.Why, full+": memory usage")
		}

		if !found {
			t.Fatalf("no resize-refused activity entry for %s: %+v", full, activity)
		}

		source := api.DeploymentShapeInstanceURL(api.DefaultProject, "dep1", "web", full)
		waitUntil(t, "a resize-refused event", 10*time.Second, func() bool {
			mu.Lock()
			defer mu.Unlock()
			for _, e := range events {
				if e.Action == "deployment-instance-resize-refused" && e.Source == source {
					return true
				}
			}

			return false
		})

		// The workload kept its memory, and its cgroup never OOM-killed anything.
		code, out, _ := env.exec(t, full, "ls", "-l", "/dev/shm/x")
		if code != 0 || !strings.Contains(out, "104857600") {
			t.Fatalf("/dev/shm/x in %s: exit %d %q", full, code, out)
		}

		for _, name := range names {
			if kills := oomKills(t, env, name); kills != 0 {
				t.Fatalf("%s: memory.oom_control says oom_kill %d", name, kills)
			}

			if pid := lxdPid(t, env, name); pid != pids[name] {
				t.Fatalf("%s restarted: init PID %d, was %d", name, pid, pids[name])
			}
		}

		// Once the workload lets go, the fleet's in-place pass (every 30 s) reaches it
		// without another resize: same PID, not outdated, and the refusal it kept seeing
		// meanwhile was said once (one activity entry, one refused in the metrics below).
		code, _, stderr = env.exec(t, full, "rm", "/dev/shm/x")
		if code != 0 {
			t.Fatalf("rm: %s", stderr)
		}

		freed := time.Now()
		waitUntil(t, "the in-place pass to shrink "+full, 75*time.Second, func() bool {
			return lxdMemory(full) == "64MiB" && !env.instancesByName(t)[full].Outdated
		}, every(time.Second), withLog(env.d.Log))
		t.Logf("the in-place pass shrank %s %s after the memory was freed", full, time.Since(freed).Round(time.Second))
		if pid := lxdPid(t, env, full); pid != pids[full] {
			t.Fatalf("%s restarted: init PID %d, was %d", full, pid, pids[full])
		}

		activity, err = env.admin.GetDeploymentActivity("dep1", 0, "web")
		must(t, err)
		refusals, passed := 0, false
		for _, a := range activity {
			if a.Action == "resize-refused" && strings.HasPrefix(a.Why, full+": ") {
				refusals++
			}

			passed = passed || a.Action == "resize" && a.Requestor.Name == "resize" && strings.HasPrefix(a.Why, full+": limits.memory=64MiB")
		}

		if refusals != 1 || !passed {
			t.Fatalf("activity: %d resize-refused entries for %s (want 1), a resize by the in-place pass %v: %+v", refusals, full, passed, activity)
		}

		// /1.0/metrics: the template's limit, and the resizes by result.
		labels := `deployment="dep1",project="default"`
		text := scrape(t, env.admin)
		if sample(text, `lxd_deployd_shape_resource_limit{`+labels+`,resource="limits.memory",shape="web"}`) != 64<<20 ||
			sample(text, `lxd_deployd_shape_resource_limit{`+labels+`,resource="limits.cpu",shape="web"}`) != 1 ||
			sample(text, `lxd_deployd_shape_resizes_total{`+labels+`,result="refused",shape="web"}`) != 1 ||
			sample(text, `lxd_deployd_shape_resizes_total{`+labels+`,result="applied",shape="web"}`) != 5 { // 2 grown, 2 shrunk, then the one freed
			t.Fatalf("metrics after the resizes:\n%s", text)
		}
	})

	t.Run("CLI", func(t *testing.T) {
		u := newCLIUser(t, env.d)
		u.fails([]string{"limits.memory 1GiB is above", "maximum (512MiB)"}, "deployment", "shape", "resize", "dep1", "web", "--memory", "1GiB")
		out := u.ok("deployment", "shape", "resize", "dep1", "web", "--memory", "128MiB", "--reason", "from the CLI")
		for _, name := range names {
			if !strings.Contains(out, name+": applied") {
				t.Fatalf("resize printed %q, want %s applied", out, name)
			}
		}

		if list := u.ok("deployment", "shape", "instance", "list", "dep1", "web"); !strings.Contains(list, "LIMITS") || !strings.Contains(list, "memory=128MiB") {
			t.Fatalf("instance list:\n%s", list)
		}

		u.ok("deployment", "shape", "set", "dep1", "web", "resource_bounds.limits.memory.maximum=1GiB", "-p")
		if got := strings.TrimSpace(u.ok("deployment", "shape", "get", "dep1", "web", "resource_bounds.limits.memory.maximum", "-p")); got != "1GiB" {
			t.Fatalf("resource_bounds.limits.memory.maximum is %q", got)
		}

		u.ok("deployment", "shape", "create", "dep1", "rzcli", "--from-image", "busybox", "--memory-bounds", "64MiB-1GiB", "--cpu-bounds", "1-2")
		t.Cleanup(func() { _ = env.admin.DeleteDeploymentShape("dep1", "rzcli", true) })
		if got := strings.TrimSpace(u.ok("deployment", "shape", "get", "dep1", "rzcli", "resource_bounds.limits.cpu.maximum", "-p")); got != "2" {
			t.Fatalf("shape create --cpu-bounds: maximum %q", got)
		}
	})
}

// TestRolloutInPlace: a template change that only touches limits.cpu is rolled out in
// place (issue 22): the rollout completes with the same instance names and the same init
// PIDs, and LXD holds the new limit.
func TestRolloutInPlace(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 0, 4)
	env.prefix = "rz-roll" // cleanupLXD removes what carries it
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Config = map[string]string{"limits.cpu": "1", "limits.memory": "128MiB"}
		put.Rollout.Trigger = api.RolloutTriggerConfigChange
	})

	names := []string{env.name("a"), env.name("b")}
	pids := map[string]int64{}
	for _, name := range names {
		env.launch(t, env.gov, name)
		pids[name] = lxdPid(t, env, name)
	}

	before, err := env.admin.GetDeploymentShapeRollouts("dep1", "web")
	must(t, err)
	env.updateShape(t, "two CPUs", func(put *api.DeploymentShapePut) { put.InstanceTemplate.Config["limits.cpu"] = "2" })
	var rollouts []api.DeploymentRollout
	waitUntil(t, "the config-change rollout", 10*time.Second, func() bool {
		rollouts, err = env.admin.GetDeploymentShapeRollouts("dep1", "web")
		must(t, err)
		return len(rollouts) > len(before)
	})

	number := 0
	for _, r := range rollouts {
		number = max(number, r.Number)
	}

	env.waitRollout(t, number, time.Minute, "complete")
	instances := env.instancesByName(t)
	if len(instances) != len(names) {
		t.Fatalf("instances after the rollout: %v, want %v", instances, names)
	}

	for _, name := range names {
		instance, ok := instances[name]
		if !ok || instance.Outdated {
			t.Fatalf("%s after the rollout: %+v (present %v)", name, instance, ok)
		}

		inst, _, err := env.lxdConn.GetInstance(name)
		must(t, err)
		if inst.Config["limits.cpu"] != "2" {
			t.Fatalf("LXD has limits.cpu %q on %s, want 2", inst.Config["limits.cpu"], name)
		}

		if pid := lxdPid(t, env, name); pid != pids[name] {
			t.Fatalf("%s restarted: init PID %d, was %d", name, pid, pids[name])
		}
	}
}

// lxdPid is the init PID LXD reports for an instance: it changes when the instance restarts.
func lxdPid(t testing.TB, env *governorEnv, name string) int64 {
	t.Helper()
	state, _, err := env.lxdConn.GetInstanceState(name)
	must(t, err)
	if state.Pid <= 0 {
		t.Fatalf("%s has no init PID (status %s)", name, state.Status)
	}

	return state.Pid
}

// oomKills reads the oom_kill count of an instance's cgroup v1 memory controller: from the
// host's lxc.payload cgroup, else from inside the container.
func oomKills(t testing.TB, env *governorEnv, name string) int {
	t.Helper()
	text := ""
	paths := []string{"/sys/fs/cgroup/memory/lxc.payload." + name + "/memory.oom_control"}
	if dir := payloadCgroup(lxdPid(t, env, name)); dir != "" {
		paths = append([]string{"/sys/fs/cgroup/memory" + dir + "/memory.oom_control"}, paths...)
	}

	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err == nil {
			text = string(data)
			break
		}
	}

	if text == "" {
		code, out, stderr := env.exec(t, name, "cat", "/sys/fs/cgroup/memory/memory.oom_control")
		if code != 0 {
			t.Fatalf("read memory.oom_control of %s: %s", name, stderr)
		}

		text = out
	}

	for _, line := range strings.Split(text, "\n") {
		if value, ok := strings.CutPrefix(line, "oom_kill "); ok {
			var n int
			_, err := fmt.Sscan(value, &n)
			must(t, err)
			return n
		}
	}

	t.Fatal(errors.New("memory.oom_control has no oom_kill line: " + text))
	return 0
}

// TestResizeWarmPool: after a resize, the warm pool is remade at the new size at once, and
// a launch that takes a pool instance runs with the new limit (issue 22).
func TestResizeWarmPool(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3)
	env.prefix = "rz-pool" // cleanupLXD removes what carries it
	seen := map[string]bool{}
	t.Cleanup(func() {
		for name := range seen {
			env.deleteByHand(name)
		}
	})

	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Config = map[string]string{"limits.memory": "128MiB"}
		put.ResourceBounds = map[string]api.DeploymentShapeResourceBound{api.LimitMemory: {Minimum: "64MiB", Maximum: "512MiB"}}
		put.WarmPool = &api.DeploymentShapeWarmPool{Size: 1}
	})

	readyWith := func(memory string) string {
		t.Helper()
		name := ""
		env.waitUntil(t, "a ready pool instance with limits.memory "+memory, time.Minute, func() bool {
			pool, err := env.readOnly.GetDeploymentShapeWarmPool("dep1", "web")
			must(t, err)
			name = ""
			for _, p := range pool {
				seen[p.Name] = true
				if p.State != "ready" {
					continue
				}

				inst, _, err := env.lxdConn.GetInstance(p.Name)
				if err == nil && inst.Config["limits.memory"] == memory {
					name = p.Name
				}
			}

			return name != "" && len(pool) == 1
		})

		return name
	}

	readyWith("128MiB")
	op, err := env.gov.ResizeDeploymentShape("dep1", "web", api.DeploymentShapeResourcesPut{Memory: "256MiB"})
	must(t, err)
	must(t, op.Wait(context.Background()))
	readyWith("256MiB")

	a := env.name("a")
	env.launch(t, env.gov, a)
	inst, _, err := env.lxdConn.GetInstance(a)
	must(t, err)
	if inst.Config["limits.memory"] != "256MiB" {
		t.Fatalf("a launch from the pool has limits.memory %q, want 256MiB", inst.Config["limits.memory"])
	}
}

// payloadCgroup is the memory cgroup of the container whose init is pid, as the host sees
// it (/proc/PID/cgroup), cut at its lxc.payload.* directory: the container's own limit and
// OOM counters are there, whatever LXD names it.
func payloadCgroup(pid int64) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		return ""
	}

	for _, line := range strings.Split(string(data), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 || !slices.Contains(strings.Split(parts[1], ","), "memory") {
			continue
		}

		dirs := strings.Split(parts[2], "/")
		for i, dir := range dirs {
			if strings.HasPrefix(dir, "lxc.payload.") {
				return strings.Join(dirs[:i+1], "/")
			}
		}
	}

	return ""
}
