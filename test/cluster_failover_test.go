package test

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// writeLoad creates a deployment through one member every 20 ms, recording how long each
// write took and which were acknowledged.
type writeLoad struct {
	mu     sync.Mutex
	acked  []string
	failed []string
	worst  time.Duration
	stop   chan struct{}
	done   chan struct{}
}

// startWrites starts the load against d; names start with prefix.
func startWrites(t testing.TB, d *daemon, prefix string) *writeLoad {
	t.Helper()
	w := &writeLoad{stop: make(chan struct{}), done: make(chan struct{})}
	server := d.Unix(t)
	go func() {
		defer close(w.done)
		ticker := time.NewTicker(20 * time.Millisecond)
		defer ticker.Stop()
		for i := 0; ; i++ {
			select {
			case <-w.stop:
				return
			case <-ticker.C:
			}

			name := fmt.Sprintf("%s-%d", prefix, i)
			start := time.Now()
			err := server.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: name}})
			took := time.Since(start)
			w.mu.Lock()
			w.worst = max(w.worst, took)
			if err == nil {
				w.acked = append(w.acked, name)
			} else {
				w.failed = append(w.failed, fmt.Sprintf("%s: %v", name, err))
			}

			w.mu.Unlock()
		}
	}()

	return w
}

// finish stops the load and returns the longest write, the acknowledged names and the
// failures.
func (w *writeLoad) finish() (time.Duration, []string, []string) {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.worst, w.acked, w.failed
}

// missing returns the acknowledged deployments d does not have.
func missing(t testing.TB, d *daemon, acked []string) []string {
	t.Helper()
	names, err := d.Unix(t).GetDeploymentNames()
	must(t, err)
	have := map[string]bool{}
	for _, name := range names {
		have[name] = true
	}

	var lost []string
	for _, name := range acked {
		if !have[name] {
			lost = append(lost, name)
		}
	}

	sort.Strings(lost)
	return lost
}

// threeMembers starts m1 and joins m2 and m3 by token, waiting for three voters with m1
// the database leader.
func threeMembers(t testing.TB, lxdSocket string, extraArgs ...string) (*daemon, *daemon, *daemon) {
	t.Helper()
	m1 := startDaemon(t, daemonOptions{LXDSocket: lxdSocket, Cluster: true, ExtraArgs: append([]string{"--cluster-name", "m1"}, extraArgs...)})
	members := []*daemon{m1}
	for _, name := range []string{"m2", "m3"} {
		token, err := m1.Unix(t).CreateClusterJoinToken(name)
		must(t, err)
		members = append(members, startDaemon(t, daemonOptions{LXDSocket: lxdSocket, Cluster: true, ExtraArgs: append([]string{"--cluster-join-token", token.Token}, extraArgs...)}))
	}

	var list []api.ClusterMember
	var err error
	waitUntil(t, "three voters led by m1", 20*time.Second, func() bool {
		list, err = m1.Unix(t).GetClusterMembers()
		voters, leader := 0, ""
		for _, m := range list {
			if m.DatabaseRole == "voter" {
				voters++
			}

			if m.DatabaseLeader {
				leader = m.ServerName
			}
		}

		return err == nil && voters == 3 && leader == "m1"
	}, every(100*time.Millisecond), showing(func() string { return fmt.Sprintf("%+v %v", list, err) }))
	return members[0], members[1], members[2]
}

// measureLeaderLoss runs a write every 20 ms against m2 while m1, the database leader,
// is stopped by stopLeader; it returns the longest write, the writes acknowledged but
// missing afterwards, and the writes that failed.
func measureLeaderLoss(t testing.TB, stopLeader func(d *daemon)) (time.Duration, []string, []string, []string) {
	t.Helper()
	m1, m2, m3 := threeMembers(t, "")
	load := startWrites(t, m2, "w")
	time.Sleep(time.Second)
	stopLeader(m1)
	time.Sleep(4 * time.Second)
	worst, acked, failed := load.finish()
	return worst, acked, missing(t, m3, acked), failed
}

// BenchmarkLeaderLoss is the `make bench` failover figure: the longest write stall when
// the database leader of three members is SIGKILLed under a write every 20 ms, and the
// acknowledged writes lost, over 5 runs; then the same with SIGTERM, which hands
// leadership over first.
func BenchmarkLeaderLoss(b *testing.B) {
	for i := 0; i < b.N; i++ {
		for _, signal := range []string{"SIGKILL", "SIGTERM"} {
			var worst time.Duration
			var written, lost, failed int
			for run := 0; run < 5; run++ {
				stall, acked, missed, errs := measureLeaderLoss(b, func(d *daemon) {
					if signal == "SIGKILL" {
						d.Kill(b)
					} else {
						d.Stop(b)
					}
				})

				b.Logf("%s run %d: longest write %v, %d acknowledged, %d lost, %d failed %v", signal, run+1, stall, len(acked), len(missed), len(errs), errs)
				worst = max(worst, stall)
				written += len(acked)
				lost += len(missed)
				failed += len(errs)
			}

			fmt.Printf("leader %s under a write every 20 ms, 5 runs: longest write stall %v, %d writes acknowledged, %d lost, %d failed\n", signal, worst.Round(time.Millisecond), written, lost, failed)
			b.ReportMetric(float64(worst.Milliseconds()), signal+"-worst-stall-ms")
			b.ReportMetric(float64(lost), signal+"-lost-writes")
		}
	}
}
