package lxdtest

// Taking a private LXD cluster down: this run's at the end of its test, and what a killed
// test binary left behind, at the start of the next run.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	lxd "github.com/canonical/lxd/client"
	"github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/internal/privatelxd"
)

// remove force-stops every instance (their cgroups are in the host's tree: a container
// killed with its daemon may leave one behind that a later test's same name would meet),
// SIGKILLs the members (a cluster's orderly shutdown waits on quorum and is slow, and
// nothing here is kept), then tears each LXD_DIR down as internal/privatelxd does, and
// deletes the namespace.
func (c *Cluster) remove() error {
	var errs []error
	if len(c.Members) > 0 {
		stopAll(c.Members[0].Socket)
	}
	for _, m := range c.Members {
		m.mu.Lock()
		pid, exited := m.pid, m.exited
		m.mu.Unlock()
		if pid == 0 {
			continue
		}
		_ = syscall.Kill(-pid, syscall.SIGKILL)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			errs = append(errs, fmt.Errorf("%s (pid %d) did not die", m.Name, pid))
		}
	}
	for _, m := range c.Members {
		if err := privatelxd.Remove(m.Dir); err != nil {
			errs = append(errs, err)
		}
	}
	if out, err := exec.Command("ip", "netns", "del", c.NetNS).CombinedOutput(); err != nil && !bytes.Contains(out, []byte("No such file")) {
		errs = append(errs, fmt.Errorf("ip netns del %s: %v: %s", c.NetNS, err, out))
	}
	if err := os.RemoveAll(c.Dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%v", errs)
}

// stopAll force-stops every running instance of the cluster, in parallel, best effort.
func stopAll(socket string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := lxd.ConnectLXDUnixWithContext(ctx, socket, nil)
	if err != nil {
		return
	}
	defer cl.Disconnect()
	insts, err := cl.GetInstances(api.InstanceTypeAny)
	if err != nil {
		return
	}
	var wg sync.WaitGroup
	for _, inst := range insts {
		if inst.StatusCode != api.Running && inst.StatusCode != api.Frozen {
			continue
		}
		wg.Go(func() {
			op, err := cl.UseTarget(inst.Location).UpdateInstanceState(inst.Name, api.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
			if err == nil {
				_ = op.WaitContext(ctx)
			}
		})
	}
	wg.Wait()
}

// logTails returns the end of every member's log, for a failure message.
func (c *Cluster) logTails() string {
	var b strings.Builder
	for _, m := range c.Members {
		for _, name := range []string{"lxd.log"} {
			data, err := os.ReadFile(filepath.Join(m.Dir, name))
			if err != nil || len(bytes.TrimSpace(data)) == 0 {
				continue
			}
			lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
			if len(lines) > 15 {
				lines = lines[len(lines)-15:]
			}
			fmt.Fprintf(&b, "\n--- %s %s ---\n%s", m.Name, name, strings.Join(lines, "\n"))
		}
	}
	return b.String()
}

// writeClusterOwner records which process owns dir ("<pid> <start time>"), for
// [sweepStaleClusters].
func writeClusterOwner(dir string) error {
	start, ok := processStart(os.Getpid())
	if !ok {
		return fmt.Errorf("cannot read /proc/self/stat")
	}
	return os.WriteFile(filepath.Join(dir, "owner"), []byte(fmt.Sprintf("%d %s\n", os.Getpid(), start)), 0o644)
}

// sweepStaleClusters removes clusters whose test binary died without cleaning up (killed,
// or `go test -timeout`): Pdeathsig took the members down, not their containers, mounts,
// directories and namespace.
func sweepStaleClusters() {
	dirs, _ := filepath.Glob(filepath.Join("/tmp", clusterPrefix+"*"))
	for _, dir := range dirs {
		owner, err := os.ReadFile(filepath.Join(dir, "owner"))
		if err != nil {
			continue // being created right now, or not ours
		}
		var pid int
		var start string
		if _, err := fmt.Sscan(string(owner), &pid, &start); err != nil {
			continue
		}
		if got, ok := processStart(pid); ok && got == start {
			continue // owner still running
		}
		members, _ := filepath.Glob(filepath.Join(dir, "m*"))
		for _, m := range members {
			_ = privatelxd.Remove(m)
		}
		_ = exec.Command("ip", "netns", "del", filepath.Base(dir)).Run()
		_ = os.RemoveAll(dir)
	}
}

// processStart returns a live (not zombie) process's start time in clock ticks since boot.
func processStart(pid int) (string, bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "", false
	}
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return "", false
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return "", false
	}
	return f[19], true
}
