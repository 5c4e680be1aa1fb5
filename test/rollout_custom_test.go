package test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// The custom rollout strategy (doc/rollouts.md#custom): a transient deployer instance,
// launched from an image the test publishes (busybox with the example blue/green deployer
// at /usr/local/bin/deployer and the test governor at /usr/local/bin/ingov, both static),
// carries out the rollout through the governor API with a credential scoped to the shape.

var deployerBuild staticBuild

// buildDeployer builds the example blue/green deployer as a static binary, once.
func buildDeployer(t testing.TB) string {
	return deployerBuild.binary(t, "deployer-bluegreen", "../examples/deployer-bluegreen")
}

// publishDeployerImage publishes the deployer image: busybox with the blue/green deployer
// and ingov pushed in. It returns the image's alias; both go at the end of the test.
func (env *governorEnv) publishDeployerImage(t testing.TB) string {
	t.Helper()
	bluegreen, ingov := buildDeployer(t), buildIngovernor(t)
	source := env.name("deployer-src")
	op, err := env.lxdConn.CreateInstance(lxdapi.InstancesPost{Name: source, Source: lxdapi.InstanceSource{Type: "image", Alias: "busybox"}})
	must(t, err)
	must(t, op.Wait())
	t.Cleanup(func() { env.deleteByHand(source) })
	for _, dir := range []string{"/usr", "/usr/local", "/usr/local/bin"} {
		_ = env.lxdConn.CreateInstanceFile(source, dir, lxdInstanceDir())
	}

	for path, binary := range map[string]string{"/usr/local/bin/deployer": bluegreen, "/usr/local/bin/ingov": ingov} {
		content, err := os.ReadFile(binary)
		must(t, err)
		env.pushFile(t, source, path, content, 0o755)
	}

	publish, err := env.lxdConn.CreateImage(lxdapi.ImagesPost{Source: &lxdapi.ImagesPostSource{Type: "instance", Name: source}}, nil)
	must(t, err)
	must(t, publish.Wait())
	fingerprint, _ := publish.Get().Metadata["fingerprint"].(string)
	t.Cleanup(func() {
		if op, err := env.lxdConn.DeleteImage(fingerprint); err == nil {
			_ = op.Wait()
		}
	})

	alias := env.prefix + "-deployer"
	must(t, env.lxdConn.CreateImageAlias(lxdapi.ImageAliasesPost{ImageAliasesEntry: lxdapi.ImageAliasesEntry{Name: alias, Target: fingerprint}}))
	t.Cleanup(func() { _ = env.lxdConn.DeleteImageAlias(alias) })
	return alias
}

// deployers returns the deployer instances LXD holds for dep1's shape web.
func (env *governorEnv) deployers(t testing.TB) []lxdapi.Instance {
	t.Helper()
	instances, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
	must(t, err)
	var found []lxdapi.Instance
	for _, instance := range instances {
		if strings.HasPrefix(instance.Config["user.lxd-deployd.deployer"], "dep1/web/") {
			found = append(found, instance)
		}
	}

	return found
}

// waitNoDeployer waits until LXD holds no deployer of web.
func (env *governorEnv) waitNoDeployer(t testing.TB, why string) {
	t.Helper()
	var left []lxdapi.Instance
	env.waitUntil(t, "the deployer deleted ("+why+")", time.Minute, func() bool {
		left = env.deployers(t)
		return len(left) == 0
	}, showing(func() string { return fmt.Sprintf("%d left", len(left)) }))
}

// customRollout sets shape web's rollout to the custom strategy with the deployer image
// and the given command (nil: the image's blue/green deployer), with a template change
// (version) to roll out, and starts a rollout; it returns its number.
func (env *governorEnv) customRollout(t testing.TB, image string, version string, command []string, change func(r *api.DeploymentShapeRollout)) int {
	t.Helper()
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		setVersion(version)(put)
		put.Rollout = api.DeploymentShapeRollout{Strategy: api.RolloutCustom, Custom: &api.DeploymentShapeRolloutCustom{Image: image, Command: command, Timeout: "2m"}}
		if change != nil {
			change(&put.Rollout)
		}
	})

	op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{Notes: "custom " + version})
	must(t, err)
	n, _ := op.Metadata["rollout"].(float64)
	return int(n)
}

// TestRolloutCustomBlueGreen rolls a shape out with the example blue/green deployer: a
// full green set beside blue, then blue deleted, within the shape's bounds; the deployer
// never counts, its output is kept for admins, and it is deleted once it exits 0.
func TestRolloutCustomBlueGreen(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 0, 4)
	image := env.publishDeployerImage(t)
	blue := env.scaleTo(t, 2)

	stop := env.startSamplingBounds(t)
	n := env.customRollout(t, image, "2", nil, nil)
	r := env.waitRollout(t, n, 3*time.Minute, "complete", "failed", "reverted")
	seen := stop()
	if r.Status != "complete" || r.Deployer == nil || r.Deployer.ExitCode == nil || *r.Deployer.ExitCode != 0 {
		t.Fatalf("blue/green rollout: %+v (deployer %+v)\n%s", r, r.Deployer, env.d.Log())
	}

	if !strings.Contains(r.Deployer.Output, "blue/green done: 2 green, 2 blue deleted") || r.Phase != "done" {
		t.Fatalf("the deployer's output is kept with the rollout: %q", r.Deployer.Output)
	}

	// Bounds: at most 4 instances of web (2 blue + 2 green), the deployer never among them.
	if seen.most > 4 {
		t.Fatalf("web held %d instances during the rollout (maximum 4)", seen.most)
	}

	versions := env.versions(t)
	if len(versions) != 2 {
		t.Fatalf("after blue/green: %v", versions)
	}

	for name, v := range versions {
		if v != "2" || !strings.Contains(name, fmt.Sprintf("-g%d-", n)) {
			t.Fatalf("after blue/green, %s runs %q", name, v)
		}
	}

	for _, name := range blue {
		if _, _, err := env.lxdConn.GetInstance(name); err == nil {
			t.Fatalf("blue %s is still in LXD", name)
		}
	}

	env.waitNoDeployer(t, "exit 0")
	r, err := env.admin.GetDeploymentShapeRollout("dep1", "web", n)
	must(t, err)
	if !r.Deployer.Deleted {
		t.Fatalf("deployer not marked deleted: %+v", r.Deployer)
	}

	// Output for admins only.
	watched, err := env.readOnly.GetDeploymentShapeRollout("dep1", "web", n)
	must(t, err)
	if watched.Deployer == nil || watched.Deployer.Output != "" || watched.Deployer.Instance != r.Deployer.Instance {
		t.Fatalf("a read-only key sees the deployer without its output: %+v", watched.Deployer)
	}

	// The activity log names the deployer's launches as any governor's.
	activity, err := env.admin.GetDeploymentActivity("dep1", 0, "web")
	must(t, err)
	found := false
	for _, a := range activity {
		found = found || (a.Action == "scale-up" && strings.Contains(a.Requestor.Name, "deployer of rollout"))
	}

	if !found {
		t.Fatalf("no scale-up by the deployer in the activity log: %+v", activity)
	}
}

// TestRolloutCustomBadInput: custom settings that cannot work are a 400 that changes
// nothing, and a custom rollout cannot be paused.
func TestRolloutCustomBadInput(t *testing.T) {
	t.Parallel()
	env := newRolloutEnv(t, 0, 2)
	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	for what, rollout := range map[string]api.DeploymentShapeRollout{
		"no image":         {Strategy: api.RolloutCustom},
		"custom, not used": {Strategy: api.RolloutRolling, Custom: &api.DeploymentShapeRolloutCustom{Image: "x"}},
		"reserved env":     {Strategy: api.RolloutCustom, Custom: &api.DeploymentShapeRolloutCustom{Image: "x", Environment: map[string]string{"LXD_DEPLOYD_SHAPE": "other"}}},
		"bad timeout":      {Strategy: api.RolloutCustom, Custom: &api.DeploymentShapeRolloutCustom{Image: "x", Timeout: "forever"}},
		"surge":            {Strategy: api.RolloutCustom, MaxSurge: "2", Custom: &api.DeploymentShapeRolloutCustom{Image: "x"}},
	} {
		put := shape.Writable()
		put.Rollout = rollout
		err = env.admin.UpdateDeploymentShape("dep1", "web", put, "")
		expectCode(t, err, 400, what)
		if err == nil || !strings.Contains(err.Error(), "rollout.") {
			t.Fatalf("%s: the refusal names the field: %v", what, err)
		}
	}

	after, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	if after.Revision != shape.Revision {
		t.Fatalf("refused changes made revision %d (was %d)", after.Revision, shape.Revision)
	}

	// An image LXD does not have: the rollout fails, saying so, and nothing is left.
	n := env.customRollout(t, "no-such-deployer-image", "2", []string{"true"}, nil)
	expectCode(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", n, "pause"), 409, "pause a custom rollout")
	r := env.waitRollout(t, n, time.Minute, "failed")
	if !strings.Contains(r.Reason, "exited -1") || !strings.Contains(r.Deployer.Output, "no-such-deployer-image") {
		t.Fatalf("missing image: %+v %+v", r, r.Deployer)
	}

	env.waitNoDeployer(t, "no image")
}

// TestRolloutCustomFailures: a deployer that exits 1 fails the rollout (auto_revert
// reverts it with a built-in rolling rollout); one that hangs is killed at the progress
// deadline; one that acts on another shape with its credential is refused. Each deployer
// is deleted, and its credential is good for its own shape only, from its own instance
// only, while it runs.
func TestRolloutCustomFailures(t *testing.T) {
	env := newRolloutEnv(t, 0, 4)
	must(t, env.admin.CreateDeploymentShape("dep1", webShape("other", 0, 2)))
	t.Cleanup(func() { _ = env.admin.DeleteDeploymentShape("dep1", "other", true) })
	image := env.publishDeployerImage(t)
	env.scaleTo(t, 2)

	// Exit 1, with auto_revert: reverted, back to version 1 by a rolling rollout.
	n := env.customRollout(t, image, "2", []string{"sh", "-c", "echo half done; echo doomed >&2; exit 1"}, func(r *api.DeploymentShapeRollout) { r.AutoRevert = true })
	r := env.waitRollout(t, n, 2*time.Minute, "reverted", "failed", "complete")
	if r.Status != "reverted" || !strings.Contains(r.Reason, "exited 1: doomed") || *r.Deployer.ExitCode != 1 || !strings.Contains(r.Deployer.Output, "half done") {
		t.Fatalf("exit 1: %+v %+v", r, r.Deployer)
	}

	revert := env.waitRollout(t, n+1, 2*time.Minute, "complete")
	if revert.Cause != "auto-revert" || revert.Deployer != nil {
		t.Fatalf("the revert is a built-in rollout: %+v", revert)
	}

	for name, v := range env.versions(t) {
		if v != "" {
			t.Fatalf("after the revert %s runs %q", name, v)
		}
	}

	env.waitNoDeployer(t, "exit 1")

	// Another shape: the credential is refused there (403), the deployer exits 1.
	n = env.customRollout(t, image, "3", []string{"/usr/local/bin/ingov", "-deployer", "launch", "other", env.name("stolen")}, nil)
	r = env.waitRollout(t, n, 2*time.Minute, "failed", "complete")
	if r.Status != "failed" || !strings.Contains(r.Reason, "may not act on shape other") {
		t.Fatalf("other shape: %+v %+v", r, r.Deployer)
	}

	other, _, err := env.admin.GetDeploymentShape("dep1", "other")
	must(t, err)
	if other.ScalingCurrent != 0 {
		t.Fatalf("the deployer launched into shape other: %+v", other)
	}

	env.waitNoDeployer(t, "other shape")

	// Hangs: killed at the progress deadline. Meanwhile its credential works on web only,
	// and only through its own socket.
	n = env.customRollout(t, image, "4", []string{"sleep", "600"}, func(r *api.DeploymentShapeRollout) { r.ProgressDeadline = "8s" })
	deployer := env.waitDeployerRuns(t)
	var input api.DeployerInput
	env.waitUntil(t, "the deployer's input", 30*time.Second, func() bool {
		code, stdout, _ := env.exec(t, deployer.Name, "cat", api.DeployerFile)
		return code == 0 && json.Unmarshal([]byte(stdout), &input) == nil
	})

	if input.Shape != "web" || input.Rollout != n || !strings.HasPrefix(input.Credential, "lxdd-deployer-") {
		t.Fatalf("deployer input: %+v", input)
	}

	hostSocket := filepath.Join(env.d.DataDir, "governor", deployer.Name+".sock")
	as := func(socket string, credential string) *client.Server {
		c, err := client.ConnectUnix(socket, &client.ConnectionArgs{TokenSource: func() (string, error) { return credential, nil }})
		must(t, err)
		return c
	}

	c := as(hostSocket, input.Credential)
	_, _, err = c.GetDeploymentShape("dep1", "web")
	must(t, err)
	_, _, err = c.GetDeploymentShape("dep1", "other")
	expectCode(t, err, 403, "read another shape")
	_, err = c.CreateDeploymentShapeInstance("dep1", "other", env.name("x"))
	expectCode(t, err, 403, "launch in another shape")
	_, _, err = c.GetDeployment("dep1")
	expectCode(t, err, 403, "read the whole deployment")
	wrong := []byte(input.Credential)
	wrong[len(wrong)-1] ^= 1
	_, _, err = as(hostSocket, string(wrong)).GetDeploymentShape("dep1", "web")
	expectCode(t, err, 401, "a wrong secret")

	r = env.waitRollout(t, n, time.Minute, "failed", "complete")
	if !strings.Contains(r.Reason, "no progress for 8s") || !strings.Contains(r.Deployer.Output, "killed: no progress") {
		t.Fatalf("hang: %+v %+v", r, r.Deployer)
	}

	env.waitNoDeployer(t, "hang")
	// The deployer's socket is gone with it, and the credential was revoked when it was
	// killed: nothing answers it any more.
	_, _, err = c.GetDeploymentShape("dep1", "web")
	if err == nil {
		t.Fatalf("the credential outlived its deployer")
	}

	// Cancelled while it runs: it is deleted, with its output so far.
	n = env.customRollout(t, image, "5", []string{"sh", "-c", "echo started; sleep 600"}, nil)
	env.waitDeployerRuns(t)
	must(t, env.admin.DeploymentShapeRolloutAction("dep1", "web", n, "cancel"))
	env.waitNoDeployer(t, "cancel")
	r, err = env.admin.GetDeploymentShapeRollout("dep1", "web", n)
	must(t, err)
	if r.Status != "cancelled" || r.Deployer.ExitCode == nil || *r.Deployer.ExitCode != -1 || !strings.Contains(r.Deployer.Output, "its rollout is no longer running") {
		t.Fatalf("cancel: %+v %+v", r, r.Deployer)
	}

	// The shape deleted with force while one runs: it is deleted too.
	env.customRollout(t, image, "6", []string{"sleep", "600"}, nil)
	env.waitDeployerRuns(t)
	must(t, env.admin.DeleteDeploymentShape("dep1", "web", true))
	env.waitNoDeployer(t, "shape deleted")
}

// waitDeployerRuns waits until web's one deployer runs in LXD.
func (env *governorEnv) waitDeployerRuns(t testing.TB) lxdapi.Instance {
	t.Helper()
	var deployer lxdapi.Instance
	env.waitUntil(t, "the deployer runs", time.Minute, func() bool {
		found := env.deployers(t)
		if len(found) == 1 && found[0].StatusCode == lxdapi.Running {
			deployer = found[0]
			return true
		}

		return false
	})

	return deployer
}

// TestRolloutCustomSurvivesRestart kills the daemon while a deployer runs: the restarted
// daemon follows it again, kills it at rollout.custom.timeout and deletes it.
func TestRolloutCustomSurvivesRestart(t *testing.T) {
	env := newRolloutEnv(t, 0, 2)
	image := env.publishDeployerImage(t)
	env.scaleTo(t, 1)
	n := env.customRollout(t, image, "2", []string{"sleep", "600"}, func(r *api.DeploymentShapeRollout) { r.Custom.Timeout = "20s" })
	env.waitUntil(t, "the deployer's command runs", time.Minute, func() bool {
		found := env.deployers(t)
		if len(found) != 1 || found[0].StatusCode != lxdapi.Running {
			return false
		}

		_, stdout, _ := env.exec(t, found[0].Name, "ps")
		return strings.Contains(stdout, "sleep 600")
	})

	// The daemon records the command's LXD operation right after starting it.
	time.Sleep(time.Second)
	env.d.Kill(t)
	env.d.Start(t)
	waitLXDOnline(t, env.d)
	r := env.waitRollout(t, n, 2*time.Minute, "failed", "complete")
	if !strings.Contains(r.Reason, "rollout.custom.timeout (20s)") {
		t.Fatalf("after a restart: %+v %+v\n%s", r, r.Deployer, env.d.Log())
	}

	env.waitNoDeployer(t, "restart")
}

// lxdInstanceDir is a directory for CreateInstanceFile.
func lxdInstanceDir() lxd.InstanceFileArgs {
	return lxd.InstanceFileArgs{Type: "directory", Mode: 0o755}
}
