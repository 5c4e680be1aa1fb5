package test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// BenchmarkRollingRollout replaces 20 busybox containers with a rolling rollout (max_surge
// 4, max_unavailable 0), and compares its wall time with the same LXD creates and deletes
// done directly in batches of 4 (create and start 4, then delete 4 old ones); it also
// reports the daemon's own CPU time per replaced instance. Run with `make bench`.
func BenchmarkRollingRollout(b *testing.B) {
	for i := 0; i < b.N; i++ {
		benchRollout(b, 20, 4)
	}
}

// cpuTime returns a process's user plus system CPU time from /proc.
func cpuTime(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	must(b, err)
	// Fields after the command name, which is in parentheses and may hold spaces.
	fields := strings.Fields(string(data)[strings.LastIndexByte(string(data), ')')+2:])
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // USER_HZ
}

func benchRollout(b *testing.B, n int, surge int) {
	env := newGovernorEnv(b, 0, n+surge)
	env.scaleTo(b, n)
	env.updateShape(b, "", func(put *api.DeploymentShapePut) {
		setVersion("2")(put)
		put.Rollout = api.DeploymentShapeRollout{MaxSurge: api.RolloutCount(strconv.Itoa(surge)), MaxUnavailable: "0"}
	})

	// The daemon's CPU time while idle with the shape, for the same span, is what the
	// rollout costs nothing of (metrics, reconcile, the webhook sender).
	pid := env.d.cmd.Process.Pid
	idleFrom := cpuTime(b, pid)
	time.Sleep(5 * time.Second)
	idlePerSecond := float64(cpuTime(b, pid)-idleFrom) / 5
	cpuBefore := cpuTime(b, pid)
	start := time.Now()
	op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(b, err)
	must(b, op.Wait(context.Background()))
	ours := time.Since(start)
	cpu := cpuTime(b, pid) - cpuBefore
	must(b, env.admin.DeleteDeploymentShape("dep1", "web", true))

	// The same LXD work done directly, in the same batches.
	inParallel := func(names []string, f func(name string) error) {
		var wg sync.WaitGroup
		for _, name := range names {
			wg.Add(1)
			go func(name string) {
				defer wg.Done()
				err := f(name)
				if err != nil {
					b.Error(err)
				}
			}(name)
		}

		wg.Wait()
		if b.Failed() {
			b.FailNow()
		}
	}

	create := env.launchByHand

	remove := func(name string) error {
		op, err := env.lxdConn.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
		if err == nil {
			err = op.Wait()
		}

		if err == nil {
			op, err = env.lxdConn.DeleteInstance(name)
		}

		if err == nil {
			err = op.Wait()
		}

		return err
	}

	var old []string
	for i := 0; i < n; i++ {
		old = append(old, env.name(fmt.Sprintf("old%d", i)))
	}

	inParallel(old, create)
	var direct time.Duration
	for batch := 0; batch*surge < n; batch++ {
		var fresh []string
		for i := 0; i < surge; i++ {
			fresh = append(fresh, env.name(fmt.Sprintf("new%d", batch*surge+i)))
		}

		t0 := time.Now()
		inParallel(fresh, create)
		inParallel(old[batch*surge:min(n, (batch+1)*surge)], remove)
		direct += time.Since(t0)
	}

	ratio := float64(ours) / float64(direct)
	fmt.Printf("rolling rollout of %d busybox containers, max_surge %d, max_unavailable 0:\n", n, surge)
	fmt.Printf("  direct LXD client, batches of %d (create+start, then delete): %v\n", surge, direct.Round(time.Millisecond))
	fmt.Printf("  through a lxd-deployd rollout: %v (ratio %.3f)\n", ours.Round(time.Millisecond), ratio)
	idle := time.Duration(idlePerSecond * ours.Seconds())
	fmt.Printf("  daemon CPU time per replaced instance: %v (%v less its idle CPU over the same time)\n", (cpu / time.Duration(n)).Round(100*time.Microsecond), ((cpu - idle) / time.Duration(n)).Round(100*time.Microsecond))
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(float64(cpu)/float64(n)/float64(time.Millisecond), "cpu-ms/instance")
	env.cleanupLXD(b)
}
