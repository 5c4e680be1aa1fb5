package test

import (
	"context"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// noInitImage publishes, under a test-unique alias, a copy of the busybox image without
// /sbin/init: LXD creates instances from it, but they fail to start. It is deleted when the
// test ends.
func (env *governorEnv) noInitImage(t *testing.T) string {
	t.Helper()
	source, alias := env.name("noinit-src"), env.name("noinit")
	must(t, env.launchByHand(source))
	defer env.deleteByHand(source)
	if code, _, stderr := env.exec(t, source, "rm", "/sbin/init"); code != 0 {
		t.Fatalf("rm /sbin/init: %s", stderr)
	}

	op, err := env.lxdConn.UpdateInstanceState(source, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
	must(t, err)
	must(t, op.Wait())
	publish, err := env.lxdConn.CreateImage(lxdapi.ImagesPost{Source: &lxdapi.ImagesPostSource{Type: "instance", Name: source}, Aliases: []lxdapi.ImageAlias{{Name: alias}}}, nil)
	must(t, err)
	must(t, publish.Wait())
	fingerprint, _ := publish.Get().Metadata["fingerprint"].(string)
	t.Cleanup(func() {
		if op, err := env.lxdConn.DeleteImage(fingerprint); err == nil {
			_ = op.Wait()
		}
	})

	return alias
}

// TestFailedStartLeavesNothing: a shape whose image has no /sbin/init. The launch fails, its
// error says why, and nothing is left: no record, nothing counted in scaling_current, and
// no instance in LXD's own list (the cleanup waits for LXD's own stop and retries). The
// shape still launches good instances afterwards.
func TestFailedStartLeavesNothing(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 2)
	alias := env.noInitImage(t)
	env.setShape(t, func(put *api.DeploymentShapePut) { put.InstanceTemplate.Source.Alias = alias })

	broken := env.name("broken")
	op, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", broken)
	must(t, err)
	err = op.Wait(context.Background())
	if err == nil {
		t.Fatalf("a launch from an image without /sbin/init succeeded")
	}

	t.Logf("launch error: %v", err)
	if strings.Contains(err.Error(), "removing what was made failed") && !strings.Contains(err.Error(), "reconcile deletes it") {
		t.Fatalf("an error that leaves an instance behind must say what happens to it: %v", err)
	}

	// Nothing left: LXD's own list, the records and the count, and it stays so (a record
	// left creating would be adopted and counted by reconcile): checked every second for 3 s,
	// a check that finds something fails the test.
	poll(3*time.Second, func() bool {
		if _, ok := env.lxdInstances(t)[broken]; ok {
			t.Fatalf("the instance that failed to start is still in LXD\n%s", env.d.Log())
		}

		if _, ok := env.instancesByName(t)[broken]; ok {
			t.Fatalf("the launch that failed left its record: %+v", env.instancesByName(t)[broken])
		}

		shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
		must(t, err)
		if shape.ScalingCurrent != 0 {
			t.Fatalf("a broken launch counts: scaling_current %d", shape.ScalingCurrent)
		}

		return false
	}, every(time.Second))

	// The shape works again with a good image, up to its maximum: the failed launch holds
	// no room.
	env.setShape(t, func(put *api.DeploymentShapePut) { put.InstanceTemplate.Source.Alias = "busybox" })
	env.launch(t, env.gov, env.name("good1"))
	env.launch(t, env.gov, env.name("good2"))
	if n := len(env.lxdInstances(t)); n != 2 {
		t.Fatalf("LXD holds %d instances of the shape, want 2", n)
	}
}
