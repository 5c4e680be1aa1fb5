package test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// TestReferenceGovernorAutoscales runs `lxd-deploy governor run` against a daemon on the
// private LXD: an admin scale request takes shape web from 1 to 3 real containers; CPU load
// started inside them scales it up to its maximum; stopping the load brings it back to its
// minimum after the stabilization window.
func TestReferenceGovernorAutoscales(t *testing.T) {
	// Serial, and alone (lanes_test.go): its instances must get the CPU they burn for the
	// governor to scale up.
	env := newGovernorEnv(t, 1, 4)
	// The governor names its instances web-<random>, outside the env's prefix: force-delete
	// the shape through the daemon so that none outlives a failed run in the shared LXD.
	t.Cleanup(func() { _ = env.admin.DeleteDeploymentShape("dep1", "web", true) })
	// The governor, with an admin key, takes dep1's webhooks (no periodic metrics events).
	g := startWebhookGovernor(t, env, `shapes:
  web:
    cpu_target: 0.25
    scale_up_cooldown: 2s
    scale_down_cooldown: 2s
    scale_down_stabilization: 6s
`, "0")
	log := g.log

	running := func() []string {
		instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
		must(t, err)
		names := []string{}
		for _, instance := range instances {
			if instance.Status == "Running" && instance.State == "created" {
				names = append(names, instance.Name)
			}
		}

		return names
	}

	waitSize := func(what string, size int, timeout time.Duration) []string {
		t.Helper()
		var names []string
		waitUntil(t, what, timeout, func() bool {
			names = running()
			return len(names) == size
		}, showing(func() string { return fmt.Sprintf("shape web has %d running instances, want %d", len(names), size) }))
		return names
	}

	// One instance to start with, as the minimum wants.
	env.launch(t, env.admin, env.name("seed"))

	// An admin asks for 3; the governor makes it so.
	_, err := env.admin.RequestShapeScale("dep1", "web", api.DeploymentShapeScaleRequest{Target: 3, Reason: "test"})
	must(t, err)
	names := waitSize("after the scale request", 3, 60*time.Second)

	// CPU load in every instance: the governor scales up toward the maximum.
	for _, name := range names {
		env.pushFile(t, name, "/load.sh", []byte("echo $$ > /load.pid\nwhile :; do :; done\n"), 0o755)

		// The exec runs as long as the loop does; it is not waited for.
		_, err := env.lxdConn.ExecInstance(name, lxdapi.InstanceExecPost{Command: []string{"/bin/sh", "/load.sh"}}, nil)
		must(t, err)
	}

	d, etag, err := env.admin.GetDeployment("dep1")
	must(t, err)
	d.Config["webhook.metrics_interval"] = "1s"
	must(t, env.admin.UpdateDeployment("dep1", d.DeploymentPut, etag))
	waitSize("under CPU load", 4, 90*time.Second)

	// Without load the shape goes back to its minimum once the stabilization window passes.
	for _, name := range names {
		// The governor may have replaced some of the loaded instances meanwhile.
		if _, _, err := env.lxdConn.GetInstance(name); err == nil {
			_, _, _ = env.exec(t, name, "/bin/sh", "-c", "kill $(cat /load.pid); true")
		}
	}

	start := time.Now()
	waitSize("after the load stopped", 1, 120*time.Second)
	if elapsed := time.Since(start); elapsed < 5*time.Second {
		t.Fatalf("scaled down after %v, before the 6s stabilization window", elapsed)
	}

	data, _ := os.ReadFile(log)
	for _, want := range []string{"scale-request", "cpu"} {
		if !strings.Contains(string(data), want) {
			t.Fatalf("the governor's log does not explain its decisions (%q missing):\n%s", want, data)
		}
	}

}
