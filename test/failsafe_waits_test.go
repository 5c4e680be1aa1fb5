package test

import (
	"context"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// TestFailSafeLaunchWhileWaitsFail (issue 31.b): LXD answers every operation wait with a
// 500 while it goes on making the instances. A failed wait says nothing of the operation, so
// the launches must neither fail for it nor drop their records while LXD finishes the work
// (the platform nemesis found the orphan that left: an instance in LXD no record names,
// counted against scaling_maximum). Once the waits answer again, every launch has
// succeeded, LXD runs exactly the recorded instances, and nothing is left unrecorded.
func TestFailSafeLaunchWhileWaitsFail(t *testing.T) {
	t.Parallel()
	private := lxdtest.Shared(t)
	proxy := lxdtest.StartProxy(t, private.Socket, 312)
	d := startDaemon(t, daemonOptions{LXDSocket: proxy.Socket})
	waitLXDOnline(t, d)
	env := &governorEnv{d: d, lxd: private, lxdConn: private.Client(t), admin: d.Unix(t), prefix: "twaitfail"}
	t.Cleanup(func() { env.cleanupLXD(t) })
	must(t, env.admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	must(t, env.admin.CreateDeploymentShape("dep1", webShape("web", 0, 3)))

	proxy.Set(lxdtest.ProxyFaults{WaitFails: true})
	names := []string{env.name("a"), env.name("b")}
	var ops []*client.Operation
	for _, name := range names {
		op, err := env.admin.CreateDeploymentShapeInstance("dep1", "web", name)
		must(t, err)
		ops = append(ops, op)
	}

	// LXD makes and starts them while every wait fails, and the waits keep failing a while
	// after (a few tries each). The window stays well inside the 30 s after which a launch
	// gives its outcome up as unknown (a loaded machine may not have made both by then).
	_, failedBefore, _ := proxy.Counts()
	made := poll(15*time.Second, func() bool {
		running := 0
		for _, instance := range env.lxdInstances(t) {
			if instance.StatusCode == lxdapi.Running {
				running++
			}
		}

		_, failed, _ := proxy.Counts()
		return running == len(names) && failed >= failedBefore+6
	})
	_, failed, _ := proxy.Counts()
	t.Logf("waits failed: %d; LXD ran both before the waits answered again: %v", failed-failedBefore, made)
	proxy.Set(lxdtest.ProxyFaults{})

	for i, op := range ops {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		err := op.Wait(ctx)
		cancel()
		if err != nil {
			t.Fatalf("launch of %s failed for waits that failed while LXD made it: %v\n%s", names[i], err, d.Log())
		}
	}

	records := env.instancesByName(t)
	inLXD := env.lxdInstances(t)
	for _, name := range names {
		record, ok := records[name]
		if !ok || record.State != "created" {
			t.Fatalf("instance %s: want a created record, got %+v (%d records)", name, record, len(records))
		}

		if inLXD[name].StatusCode != lxdapi.Running {
			t.Fatalf("instance %s: want it running in LXD, got %q", name, inLXD[name].Status)
		}
	}

	if len(inLXD) != len(records) {
		var unrecorded []string
		for name := range inLXD {
			if _, ok := records[name]; !ok {
				unrecorded = append(unrecorded, name)
			}
		}

		t.Fatalf("LXD holds %d instances, the records %d: unrecorded %s", len(inLXD), len(records), strings.Join(unrecorded, ", "))
	}

	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if shape.ScalingCurrent != len(names) {
		t.Fatalf("scaling_current %d, want %d", shape.ScalingCurrent, len(names))
	}
}
