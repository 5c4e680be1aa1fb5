package test

import (
	"bytes"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
)

// Helpers for the tests where the image a shape's template names changes under it: the
// shape names an alias of the env's own, and the test moves that alias to a new image.

// busyboxAlias makes an alias of busybox named for the env, removed at the end of the test,
// and returns it with busybox's fingerprint.
func (env *governorEnv) busyboxAlias(t testing.TB) (alias string, busybox string) {
	t.Helper()
	alias = env.prefix + "-img"
	entry, _, err := env.lxdConn.GetImageAlias("busybox")
	must(t, err)
	must(t, env.lxdConn.CreateImageAlias(lxdapi.ImageAliasesPost{ImageAliasesEntry: lxdapi.ImageAliasesEntry{Name: alias, Target: entry.Target}}))
	t.Cleanup(func() { _ = env.lxdConn.DeleteImageAlias(alias) })
	return alias, entry.Target
}

// publishNewImage publishes busybox from a container that never ran: a new image, whose
// fingerprint differs from busybox's. The container and the image go at the end of the test.
func (env *governorEnv) publishNewImage(t testing.TB, busybox string) string {
	t.Helper()
	return env.publishNewImageFrom(t, busybox, "imgsrc")
}

// publishNewImageFrom is publishNewImage from a container named for source, so that a test
// can publish more than one image: a source other than imgsrc gets a file naming it, which
// makes its image differ from the others.
func (env *governorEnv) publishNewImageFrom(t testing.TB, busybox string, source string) string {
	t.Helper()
	marker := source
	source = env.name(source)
	op, err := env.lxdConn.CreateInstance(lxdapi.InstancesPost{Name: source, Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}})
	must(t, err)
	must(t, op.Wait())
	t.Cleanup(func() { env.deleteByHand(source) })
	if marker != "imgsrc" {
		must(t, env.lxdConn.CreateInstanceFile(source, "/marker", lxdInstanceFile([]byte(marker+"\n"), 0o644)))
	}
	publish, err := env.lxdConn.CreateImage(lxdapi.ImagesPost{Source: &lxdapi.ImagesPostSource{Type: "instance", Name: source}}, nil)
	must(t, err)
	must(t, publish.Wait())
	fingerprint, _ := publish.Get().Metadata["fingerprint"].(string)
	if fingerprint == "" || fingerprint == busybox {
		t.Fatalf("publish gave fingerprint %q", fingerprint)
	}

	t.Cleanup(func() {
		if op, err := env.lxdConn.DeleteImage(fingerprint); err == nil {
			_ = op.Wait()
		}
	})

	return fingerprint
}

// rollOutImageChange moves alias to the image fingerprint and waits until the rollout that
// follows by itself (rollout 1, cause image-change) is complete.
func (env *governorEnv) rollOutImageChange(t testing.TB, alias string, fingerprint string, timeout time.Duration) {
	t.Helper()
	must(t, env.lxdConn.UpdateImageAlias(alias, lxdapi.ImageAliasesEntryPut{Target: fingerprint}, ""))
	r := env.waitRollout(t, 1, timeout, "complete")
	if r.Cause != "image-change" {
		t.Fatalf("rollout: %+v", r)
	}
}

// requireOnImage fails unless shape web has n instances, each current and running the
// image fingerprint in LXD; why ends the failure message.
func (env *governorEnv) requireOnImage(t testing.TB, n int, fingerprint string, why string) {
	t.Helper()
	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	if len(instances) != n {
		t.Fatalf("instances after the rollout: %+v", instances)
	}

	for _, i := range instances {
		live, _, err := env.lxdConn.GetInstance(i.Name)
		must(t, err)
		if i.Outdated || live.Config["volatile.base_image"] != fingerprint {
			t.Fatalf("instance %s: outdated %v, image %s (want %s)%s", i.Name, i.Outdated, live.Config["volatile.base_image"], fingerprint, why)
		}
	}
}

// publishBigImage makes an image like busybox with 100 MB more in its rootfs, uncompressed
// so that publishing it stays quick.
func (env *governorEnv) publishBigImage(b *testing.B, alias string) {
	b.Helper()
	name := env.name("bigsrc")
	defer env.deleteByHand(name)
	must(b, env.launchByHand(name))
	var out bytes.Buffer
	done := make(chan bool)
	op, err := env.lxdConn.ExecInstance(name, lxdapi.InstanceExecPost{Command: []string{"dd", "if=/dev/urandom", "of=/payload", "bs=1M", "count=100"}, WaitForWS: true}, lxdExecArgs(&out, &out, done))
	must(b, err)
	must(b, op.Wait())
	<-done
	op, err = env.lxdConn.UpdateInstanceState(name, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, "")
	must(b, err)
	must(b, op.Wait())
	op, err = env.lxdConn.CreateImage(lxdapi.ImagesPost{
		Source:               &lxdapi.ImagesPostSource{Type: "instance", Name: name},
		CompressionAlgorithm: "none",
		ImagePut:             lxdapi.ImagePut{Properties: map[string]string{"description": "busybox with a 100 MB payload (bench)"}},
	}, nil)
	must(b, err)
	must(b, op.Wait())
	fingerprint, _ := op.Get().Metadata["fingerprint"].(string)
	must(b, env.lxdConn.CreateImageAlias(lxdapi.ImageAliasesPost{ImageAliasesEntry: lxdapi.ImageAliasesEntry{Name: alias, Type: "container", Target: fingerprint}}))
}
