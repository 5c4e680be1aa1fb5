package test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// TestShapeCreateSources checks "lxd-deploy deployment shape create" end to end on a
// private LXD: --from-image <remote>:<alias> names an image server remote added as lxc
// adds one (here a second private LXD serving its images over HTTPS on loopback, with an
// alias the daemon's LXD does not have), and LXD pulls from it at launch; --from-profile
// gives the instances those profiles in LXD; --vm asks LXD for a virtual machine. VMs
// cannot start on this machine (no KVM): the test checks the shape's request and that LXD
// was asked for a VM (its refusal says so), and stops there.
func TestShapeCreateSources(t *testing.T) {
	t.Parallel()
	// The image server: its own LXD, its busybox image public under an alias of its own.
	// It starts before the daemon so that it stops after it: its stop ends the OS thread
	// it is locked to, and a daemon forked from that thread would die of its Pdeathsig.
	images := lxdtest.Start(t)
	env := newGovernorEnv(t, 0, 3)
	u := newCLIUser(t, env.d)
	imagesConn := images.Client(t)
	port := freePort(t)
	server, etag, err := imagesConn.GetServer()
	must(t, err)
	put := server.Writable()
	put.Config["core.https_address"] = fmt.Sprintf("127.0.0.1:%d", port)
	must(t, imagesConn.UpdateServer(put, etag))
	alias, _, err := imagesConn.GetImageAlias(lxdtest.Image)
	must(t, err)
	image, etag, err := imagesConn.GetImage(alias.Target)
	must(t, err)
	imagePut := image.Writable()
	imagePut.Public = true
	must(t, imagesConn.UpdateImage(image.Fingerprint, imagePut, etag))
	remoteAlias := env.prefix + "-only-there"
	must(t, imagesConn.CreateImageAlias(lxdapi.ImageAliasesPost{ImageAliasesEntry: lxdapi.ImageAliasesEntry{Name: remoteAlias, Target: image.Fingerprint}}))
	if _, _, err := env.lxdConn.GetImageAlias(remoteAlias); err == nil {
		t.Fatalf("the daemon's LXD has alias %s too: the test would prove nothing", remoteAlias)
	}

	addr := fmt.Sprintf("https://127.0.0.1:%d", port)
	u.fails([]string{"not signed by an authority", "--accept-certificate"}, "remote", "add", "imgs", addr, "--protocol", "lxd")
	u.fails([]string{`--protocol "ftp" is not known`}, "remote", "add", "imgs", addr, "--protocol", "ftp")
	if out := u.ok("remote", "list", "-f", "csv"); strings.Contains(out, "imgs") {
		t.Fatalf("a refused remote add saved the remote:\n%s", out)
	}

	if out := u.ok("remote", "add", "imgs", addr, "--protocol", "lxd", "--public", "--accept-certificate"); !contains(out, "imgs", "lxd") {
		t.Errorf("remote add printed %q", out)
	}

	u.fails([]string{`remote "imgs" is an image server`}, "deployment", "list", "imgs:")

	// --from-image <remote>:<alias>.
	u.ok("deployment", "shape", "create", "dep1", "pulled", "--from-image", "imgs:"+remoteAlias, "--scaling-max", "2")
	shape, _, err := env.admin.GetDeploymentShape("dep1", "pulled")
	must(t, err)
	source := shape.InstanceTemplate.Source
	if source.Type != "image" || source.Alias != remoteAlias || source.Server != addr || source.Protocol != "lxd" || !strings.Contains(source.Certificate, "BEGIN CERTIFICATE") {
		t.Fatalf("shape from imgs:%s: source %+v", remoteAlias, source)
	}

	launch := func(shape string, name string) error {
		op, err := env.admin.CreateDeploymentShapeInstance("dep1", shape, name)
		if err != nil {
			return err
		}

		return op.Wait(context.Background())
	}

	pulled := env.name("pulled")
	must(t, launch("pulled", pulled))
	instance, _, err := env.lxdConn.GetInstance(pulled)
	must(t, err)
	if instance.Status != "Running" || instance.Config["volatile.base_image"] != image.Fingerprint {
		t.Errorf("instance from the image server: %s, base image %q, want %q", instance.Status, instance.Config["volatile.base_image"], image.Fingerprint)
	}

	for _, bad := range []struct {
		image string
		want  string
	}{
		{"nope:busybox", `"nope" is not an image server remote`},
		{"local:busybox", `"local" is not an image server remote`},
		{"imgs:", "give an alias or fingerprint"},
	} {
		u.fails([]string{bad.want}, "deployment", "shape", "create", "dep1", "bad", "--from-image", bad.image)
	}

	_, _, err = env.admin.GetDeploymentShape("dep1", "bad")
	expectCode(t, err, 404, "a refused shape create")

	// --from-profile: the instances get exactly those profiles in LXD.
	profile := env.prefix + "-p1"
	must(t, env.lxdConn.CreateProfile(lxdapi.ProfilesPost{Name: profile, ProfilePut: lxdapi.ProfilePut{Config: map[string]string{"user.edge": "from-profile"}}}))
	t.Cleanup(func() {
		_ = env.admin.DeleteDeploymentShape("dep1", "profiled", true)
		_ = env.lxdConn.DeleteProfile(profile)
	})

	u.ok("deployment", "shape", "create", "dep1", "profiled", "--from-image", "busybox", "--from-profile", "default", "--from-profile", profile)
	profiled := env.name("profiled")
	must(t, launch("profiled", profiled))
	instance, _, err = env.lxdConn.GetInstance(profiled)
	must(t, err)
	if !slices.Equal(instance.Profiles, []string{"default", profile}) || instance.ExpandedConfig["user.edge"] != "from-profile" || instance.Type != "container" {
		t.Errorf("instance from --from-profile: profiles %v, user.edge %q, type %s", instance.Profiles, instance.ExpandedConfig["user.edge"], instance.Type)
	}

	u.fails([]string{"not a valid profile name"}, "deployment", "shape", "create", "dep1", "bad", "--from-profile", "a b")

	// --vm: a VM shape's request is LXD's, type virtual-machine; LXD is asked for a VM and,
	// without KVM here, refuses it. Nothing is left behind.
	u.ok("deployment", "shape", "create", "dep1", "vm", "--vm", "--from-image", "busybox")
	shape, _, err = env.admin.GetDeploymentShape("dep1", "vm")
	must(t, err)
	if shape.InstanceTemplate.Type != lxdapi.InstanceTypeVM || shape.InstanceTemplate.Source.Alias != "busybox" {
		t.Errorf("vm shape's template: %+v", shape.InstanceTemplate)
	}

	vm := env.name("vm")
	err = launch("vm", vm)
	if err == nil {
		t.Logf("this machine started a VM: nothing more to check")
	} else {
		t.Logf("LXD refused the VM, as expected without KVM: %v", err)
		// LXD 5.0 here: `Requested image's type "container" doesn't match instance type
		// "virtual-machine"`; with a VM image, a missing KVM or QEMU would be named.
		lower := strings.ToLower(err.Error())
		if !strings.Contains(lower, "virtual-machine") && !strings.Contains(lower, "kvm") && !strings.Contains(lower, "qemu") {
			t.Errorf("the VM launch failed for another reason than being a VM: %v", err)
		}

		if _, _, err := env.lxdConn.GetInstance(vm); err == nil {
			t.Errorf("a failed VM launch left %s in LXD", vm)
		}

		instances, err := env.admin.GetDeploymentShapeInstanceNames("dep1", "vm")
		must(t, err)
		if len(instances) != 0 {
			t.Errorf("a failed VM launch left records: %v", instances)
		}
	}
}
