package test

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// Issue 32 items 1, 8 and 9: a governor's resize cannot hand LXD a CPU set it expands
// into gigabytes, cannot resize a limit the shape does not bound, and cannot push an
// admin's revisions or activity entries out of what is kept (doc/security.md, "Resizes").

// TestResizeHostileCPUSet (item 1): with resource_bounds limits.cpu 1..4, the CPU set
// whose count overflowed to 2 on main, and a plain wide range, are 400s naming the
// ceiling; nothing is recorded and LXD's instance config is unchanged. The ceiling holds
// on every path that stores a template, bounds or none: a shape's create and PATCH, a
// templated config. Within the ceiling, a set naming CPUs this host lacks is what LXD
// itself decides on (the test logs what it answered). Should a hostile value get through
// again, it reaches a private LXD held to 1 GiB by a memory cgroup of its own (issue 32's
// grew to 3 GiB), never the machine's memory.
func TestResizeHostileCPUSet(t *testing.T) {
	env := newHostileEnv(t, 1<<30)
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Config = map[string]string{"limits.cpu": "1"}
		put.ResourceBounds = map[string]api.DeploymentShapeResourceBound{api.LimitCPU: {Minimum: "1", Maximum: "4"}}
	})

	name := env.name("a")
	env.launch(t, env.gov, name)
	before, _, err := env.lxdConn.GetInstance(name)
	must(t, err)
	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)

	for _, hostile := range []string{"0-9223372036854775806,0-9223372036854775806,0-3", "0-3000000", "0-3,0-3", "4097"} {
		_, err = env.gov.ResizeDeploymentShape("dep1", "web", api.DeploymentShapeResourcesPut{CPU: hostile})
		expectCode(t, err, http.StatusBadRequest, "a governor's resize to limits.cpu "+hostile)
		if !strings.Contains(err.Error(), "4095") && !strings.Contains(err.Error(), "4096") && !strings.Contains(err.Error(), "more than once") {
			t.Fatalf("the refusal of %s does not say what to do: %v", hostile, err)
		}
	}

	after, _, err := env.lxdConn.GetInstance(name)
	must(t, err)
	if after.Config["limits.cpu"] != before.Config["limits.cpu"] || after.Config["limits.cpu"] != "1" {
		t.Fatalf("LXD's limits.cpu went from %q to %q", before.Config["limits.cpu"], after.Config["limits.cpu"])
	}

	now, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if now.Revision != shape.Revision || now.InstanceTemplate.Config["limits.cpu"] != "1" {
		t.Fatalf("a refused resize changed the shape: revision %d -> %d, template %v", shape.Revision, now.Revision, now.InstanceTemplate.Config)
	}

	// Every path that stores a template: create, PATCH (bounds or none), a templated config.
	wide := map[string]string{"limits.cpu": "0-3000000"}
	bad := webShape("wide", 0, 1)
	bad.InstanceTemplate.Config = wide
	err = env.admin.CreateDeploymentShape("dep1", bad)
	expectCode(t, err, http.StatusBadRequest, "a shape whose template has limits.cpu 0-3000000")
	_, _, err = env.admin.Query(http.MethodPatch, "/1.0/deployments/dep1/shapes/web", map[string]any{"resource_bounds": map[string]any{"limits.cpu": nil}, "instance_template": map[string]any{"config": wide}}, "")
	expectCode(t, err, http.StatusBadRequest, "a PATCH of the template to limits.cpu 0-3000000 without bounds")
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "tpl"}}))
	d, etag, err := env.admin.GetDeployment("tpl")
	must(t, err)
	put := d.Writable()
	put.Template = "resources:\n- name: wide\n  type: shape\n  properties:\n    scaling_maximum: 1\n    instance_template: {source: {type: image, alias: busybox}, config: {limits.cpu: 0-3000000}}\n"
	_, err = env.admin.ApplyDeploymentTemplate("tpl", put, etag, client.ApplyOptions{})
	expectCode(t, err, http.StatusBadRequest, "a templated config with limits.cpu 0-3000000")
	if !strings.Contains(err.Error(), "4095") {
		t.Fatalf("the templated config's refusal does not name the ceiling: %v", err)
	}

	// Within the ceiling and the bounds, LXD decides: a set naming CPUs this host lacks.
	op, err := env.gov.ResizeDeploymentShape("dep1", "web", api.DeploymentShapeResourcesPut{CPU: "0-3"})
	must(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	must(t, op.Wait(ctx))
	after, _, err = env.lxdConn.GetInstance(name)
	must(t, err)
	t.Logf("limits.cpu 0-3: operation metadata %v; LXD has %q", op.Metadata["instances"], after.Config["limits.cpu"])
}

// TestResizeUnboundedGovernor (item 8): a governor's resize of a limit the shape does not
// bound is a 403 that says how to allow it, and LXD keeps its config; an admin may resize
// it (within LXD's rules and the CPU ceiling).
func TestResizeUnboundedGovernor(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 2)
	env.prefix = "rz-unbounded"
	env.setShape(t, func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Config = map[string]string{"limits.memory": "128MiB", "limits.cpu": "1"}
		put.ResourceBounds = map[string]api.DeploymentShapeResourceBound{api.LimitMemory: {Minimum: "64MiB", Maximum: "512MiB"}}
	})

	name := env.name("a")
	env.launch(t, env.gov, name)
	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)

	_, err = env.gov.ResizeDeploymentShape("dep1", "web", api.DeploymentShapeResourcesPut{CPU: "4096"})
	expectCode(t, err, http.StatusForbidden, "a governor's resize of the unbounded limits.cpu")
	if !strings.Contains(err.Error(), `resource_bounds["limits.cpu"]`) {
		t.Fatalf("the refusal does not say how to allow it: %v", err)
	}

	env.setShape(t, func(put *api.DeploymentShapePut) { put.ResourceBounds = nil })
	_, err = env.gov.ResizeDeploymentShape("dep1", "web", api.DeploymentShapeResourcesPut{Memory: "1EiB"})
	expectCode(t, err, http.StatusForbidden, "a governor's resize to limits.memory 1EiB without bounds")

	inst, _, err := env.lxdConn.GetInstance(name)
	must(t, err)
	if inst.Config["limits.memory"] != "128MiB" || inst.Config["limits.cpu"] != "1" {
		t.Fatalf("LXD's config changed: %v", inst.Config)
	}

	now, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if now.Revision != shape.Revision+1 {
		t.Fatalf("refused resizes recorded revisions: %d, want %d (the bounds' removal only)", now.Revision, shape.Revision+1)
	}

	op, err := env.admin.ResizeDeploymentShape("dep1", "web", api.DeploymentShapeResourcesPut{Memory: "256MiB"})
	must(t, err)
	must(t, op.Wait(context.Background()))
	inst, _, err = env.lxdConn.GetInstance(name)
	must(t, err)
	if inst.Config["limits.memory"] != "256MiB" {
		t.Fatalf("an admin's resize without bounds: LXD has limits.memory %q, want 256MiB", inst.Config["limits.memory"])
	}
}

// TestResizeKeepsAdminHistory (item 9): 22 resizes within the bounds leave the admin's
// revisions in place (rollback to revision 2 works, as it did not on main), and with
// activity.keep 10 the governor's entries do not push the admin's out of the log.
func TestResizeKeepsAdminHistory(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 2)
	env.prefix = "rz-history"
	d, etag, err := env.admin.GetDeployment("dep1")
	must(t, err)
	put := d.Writable()
	put.Config = map[string]string{"activity.keep": "10"}
	must(t, env.admin.UpdateDeployment("dep1", put, etag))

	env.updateShape(t, "admin: version 2", func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Config = map[string]string{"limits.memory": "128MiB", "user.version": "2"}
		put.ResourceBounds = map[string]api.DeploymentShapeResourceBound{api.LimitMemory: {Minimum: "64MiB", Maximum: "512MiB"}}
	})
	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	adminRevision := shape.Revision

	for i := 0; i < 22; i++ {
		op, err := env.gov.ResizeDeploymentShape("dep1", "web", api.DeploymentShapeResourcesPut{Memory: fmt.Sprintf("%dMiB", 100+i)})
		must(t, err)
		must(t, op.Wait(context.Background()))
	}

	revisions, err := env.admin.GetDeploymentShapeRevisions("dep1", "web")
	must(t, err)
	kept := map[int]string{}
	for _, r := range revisions {
		kept[r.Revision] = r.Cause
	}

	if kept[1] == "" || kept[adminRevision] == "" {
		t.Fatalf("the admin's revisions 1 and %d were pruned by resizes: kept %v", adminRevision, kept)
	}

	rolled, err := env.admin.RollbackDeploymentShape("dep1", "web", api.DeploymentShapeRollbackPost{Revision: adminRevision})
	must(t, err)
	t.Logf("rolled back to %d: %+v", adminRevision, rolled)
	now, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if now.InstanceTemplate.Config["limits.memory"] != "128MiB" {
		t.Fatalf("after the rollback the template has %v", now.InstanceTemplate.Config)
	}

	activity, err := env.admin.GetDeploymentActivity("dep1", 0, "")
	must(t, err)
	admins := 0
	for _, entry := range activity {
		if entry.Who == "admin" && strings.Contains(entry.Why, "admin: version 2") {
			admins++
		}
	}

	if admins != 1 {
		var shown []string
		for _, entry := range activity {
			shown = append(shown, entry.Who+": "+entry.Why)
		}

		t.Fatalf("the admin's entry for revision %d is gone from the activity log: %s", adminRevision, strings.Join(shown, "; "))
	}
}

// newHostileEnv is newGovernorEnv on a private LXD of the test's own whose daemon runs in
// a cgroup v1 memory cgroup limited to limit bytes: what a hostile value makes LXD
// allocate is its own OOM, not the machine's. The cgroup is made under the test binary's
// own memory cgroup and removed after the LXD has stopped.
func newHostileEnv(t *testing.T, limit int64) *governorEnv {
	t.Helper()
	cgroup := memoryCgroup(t, limit)
	private := lxdtest.Start(t)
	pid := lxdDaemonPid(t, private.Dir)
	must(t, os.WriteFile(filepath.Join(cgroup, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0))
	t.Logf("LXD (pid %d) runs in %s, limited to %d MiB", pid, cgroup, limit>>20)

	d := startDaemon(t, daemonOptions{LXDSocket: private.Socket})
	waitLXDOnline(t, d)
	env := &governorEnv{d: d, lxd: private, lxdConn: private.Client(t), admin: d.Unix(t), prefix: "rz-hostile"}
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(t, env.admin.CreateDeploymentShape("dep1", webShape("web", 0, 2)))
	env.gov = env.governor(t, "dep1", "gov", "admin")
	env.readOnly = env.governor(t, "dep1", "watcher", "read-only")
	return env
}

// memoryCgroup makes a memory cgroup under the test binary's own, limited to limit bytes.
// Its cleanup, registered before the LXD's, runs after it: what is left in the cgroup
// (a straggler, LXD's sub-cgroups of its containers) goes back to the parent, then it is
// removed.
func memoryCgroup(t *testing.T, limit int64) string {
	t.Helper()
	self, err := os.ReadFile("/proc/self/cgroup")
	must(t, err)
	parent := ""
	for _, line := range strings.Split(string(self), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && slices.Contains(strings.Split(parts[1], ","), "memory") {
			parent = filepath.Join("/sys/fs/cgroup/memory", parts[2])
		}
	}

	if parent == "" {
		t.Skip("no cgroup v1 memory controller: the hostile resize needs one to hold its private LXD's memory")
	}

	dir := filepath.Join(parent, fmt.Sprintf("lxd-deployd-test-hostile-%d", os.Getpid()))
	must(t, os.Mkdir(dir, 0o755))
	t.Cleanup(func() {
		// Depth first: LXD's cgroups of its containers may be left inside.
		var dirs []string
		_ = filepath.WalkDir(dir, func(path string, entry fs.DirEntry, err error) error {
			if err == nil && entry.IsDir() {
				dirs = append(dirs, path)
			}

			return nil
		})

		for i := len(dirs) - 1; i >= 0; i-- {
			procs, _ := os.ReadFile(filepath.Join(dirs[i], "cgroup.procs"))
			for _, pid := range strings.Fields(string(procs)) {
				_ = os.WriteFile(filepath.Join(parent, "cgroup.procs"), []byte(pid), 0)
			}

			err := os.Remove(dirs[i])
			if err != nil {
				t.Logf("leaving cgroup %s: %v", dirs[i], err)
			}
		}
	})

	must(t, os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0))
	return dir
}
