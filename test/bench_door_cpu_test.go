package test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// cpuAcct is a cpuacct cgroup of the bench's own in the host's tree, holding the
// instances' httpd processes: busybox httpd forks a child per connection, and a child's CPU
// is lost to /proc once it exits (httpd does not wait for them), but counted by its
// cgroup. Accounting only: cpu (the scheduler) is a hierarchy of its own on this host.
type cpuAcct struct {
	root, dir string
	why       string // why nothing is measured, when dir is ""
}

// newCPUAcct makes the cgroup, removed at the end. In the namespace runBenchInNetns made,
// /sys is the namespace's own sysfs, without the host's cgroup tree: it is reached through
// an ancestor's root (/proc/<pid>/root), which is still the host's mounts.
func newCPUAcct(b *testing.B) *cpuAcct {
	c := &cpuAcct{}
	candidates := []string{"/sys/fs/cgroup/cpuacct"}
	for pid, i := os.Getppid(), 0; pid > 1 && i < 4; i++ {
		candidates = append(candidates, fmt.Sprintf("/proc/%d/root/sys/fs/cgroup/cpuacct", pid))
		pid = parentOf(pid)
	}

	for _, root := range candidates {
		if _, err := os.Stat(filepath.Join(root, "cpuacct.usage")); err == nil {
			c.root = root
			break
		}
	}

	if c.root == "" {
		c.why = "no cgroup v1 cpuacct hierarchy found (" + strings.Join(candidates, ", ") + ")"
		return c
	}

	dir := filepath.Join(c.root, fmt.Sprintf("ldd-bench-%d", os.Getpid()))
	if err := os.Mkdir(dir, 0o755); err != nil {
		c.why = err.Error()
		return c
	}

	c.dir = dir
	b.Cleanup(func() {
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, pid := range strings.Fields(string(procs)) {
			_ = os.WriteFile(filepath.Join(c.root, "cgroup.procs"), []byte(pid), 0o644)
		}

		_ = os.Remove(dir)
	})
	return c
}

// addInstance moves the httpd processes of an instance (those in its network namespace)
// into the cgroup; the children they fork later are born in it.
func (c *cpuAcct) addInstance(b *testing.B, env *governorEnv, name string) {
	if c.dir == "" {
		return
	}

	state, _, err := env.lxdConn.GetInstanceState(name)
	must(b, err)
	ns, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/net", state.Pid))
	must(b, err)
	moved := 0
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		comm, err := os.ReadFile(filepath.Join(d, "comm"))
		if err != nil || strings.TrimSpace(string(comm)) != "httpd" {
			continue
		}

		if other, err := os.Readlink(filepath.Join(d, "ns", "net")); err != nil || other != ns {
			continue
		}

		if err := os.WriteFile(filepath.Join(c.dir, "cgroup.procs"), []byte(filepath.Base(d)), 0o644); err == nil {
			moved++
		}
	}

	if moved == 0 {
		c.why = "no httpd process found in " + name
		c.dir = ""
	}
}

// usage is the CPU time the cgroup's processes used (0 when nothing is measured).
func (c *cpuAcct) usage() time.Duration {
	if c.dir == "" {
		return 0
	}

	raw, err := os.ReadFile(filepath.Join(c.dir, "cpuacct.usage"))
	if err != nil {
		return 0
	}

	ns, _ := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	return time.Duration(ns)
}

// parentOf is a process's parent pid (0 when unknown).
func parentOf(pid int) int {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}

	s := string(stat)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 2 {
		return 0
	}

	ppid, _ := strconv.Atoi(f[1])
	return ppid
}
