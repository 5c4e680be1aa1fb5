package test

import (
	"context"
	"sync"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// sampleEvery calls sample at once, then again interval after each call returns, in a
// goroutine of its own, until the returned stop is called: the one way the end-to-end tests
// watch something while it happens (LXD's listing during a rollout, say), where waitUntil
// waits for one state. stop returns once the last call has returned, so what sample wrote
// can be read after it without a lock; stop may be called more than once, and is called
// when the test ends.
func sampleEvery(t testing.TB, interval time.Duration, sample func()) (stop func()) {
	t.Helper()
	halt := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			sample()
			select {
			case <-halt:
				return
			case <-time.After(interval):
			}
		}
	}()

	var once sync.Once
	stop = func() {
		once.Do(func() { close(halt) })
		<-done
	}

	t.Cleanup(stop)
	return stop
}

// sampleLXD reads LXD's own instance list through conn every interval (with sampleEvery)
// and hands each listing to sample; a read that fails is no sample. It reports the
// failures to failed when that is not nil.
func sampleLXD(t testing.TB, conn lxd.InstanceServer, interval time.Duration, sample func([]lxdapi.Instance), failed func(error)) (stop func()) {
	t.Helper()
	return sampleEvery(t, interval, func() {
		instances, err := conn.GetInstances(lxdapi.InstanceTypeAny)
		if err != nil {
			if failed != nil {
				failed(err)
			}

			return
		}

		sample(instances)
	})
}

// serveRunning gives each instance of conn's LXD, as soon as it runs, what configure does
// to it (an address on a bridge and a server: busybox has no DHCP client and its init
// starts nothing), reading LXD's list with sampleLXD every interval until ctx ends.
// configure gets how many instances it configured before this one and says whether it
// did; one it did not is tried again at the next sample.
func serveRunning(ctx context.Context, t testing.TB, conn lxd.InstanceServer, interval time.Duration, configure func(name string, n int) bool) {
	done := map[string]bool{}
	stop := sampleLXD(t, conn, interval, func(instances []lxdapi.Instance) {
		for _, i := range instances {
			if !done[i.Name] && i.StatusCode == lxdapi.Running && configure(i.Name, len(done)) {
				done[i.Name] = true
			}
		}
	}, nil)
	<-ctx.Done()
	stop()
}
