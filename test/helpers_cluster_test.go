package test

import (
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

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

// startMember starts a daemon that joins the cluster through a token issued by via; no
// file is copied.
func startMember(t *testing.T, via *daemon, name string, lxdSocket string) *daemon {
	t.Helper()
	token, err := via.Unix(t).CreateClusterJoinToken(name)
	must(t, err)
	return startDaemon(t, daemonOptions{LXDSocket: lxdSocket, Cluster: true, ExtraArgs: []string{"--cluster-join-token", token.Token}})
}

// writeLoad creates a deployment through one member every 20 ms, recording how long each
// write took and which were acknowledged.
type writeLoad struct {
	mu     sync.Mutex
	acked  []string
	failed []string
	worst  time.Duration
	began  time.Time // when the longest write was sent
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
			if took > w.worst {
				w.worst, w.began = took, start
			}
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

// longestBegan is when the longest write was sent.
func (w *writeLoad) longestBegan() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.began
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
