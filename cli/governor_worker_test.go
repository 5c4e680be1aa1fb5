// Tests of the reference governor's workers: scaling decisions, policy and commands.
package main

import (
	"bytes"
	"crypto/rand"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/policy"
	"github.com/lxd-deployd/lxd-deployd/shared/rules"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

func TestGovernorOneWorkerPerShape(t *testing.T) {
	gt := newGovernorTest(t, &policy.Policy{}, false)
	gt.scaler.addShape("web", 1, 0, 5)
	gt.scaler.addShape("worker", 0, 0, 5)
	gt.scaler.started = make(chan string, 10)
	gt.scaler.gate = make(chan struct{})
	started := func(want string) {
		t.Helper()
		select {
		case op := <-gt.scaler.started:
			if op != want {
				t.Errorf("started %q, want %q", op, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s never started", want)
		}
	}

	gt.send(testScaleRequest("ev1", "web", 2))
	started("launch web")

	// While web is busy: web's next requests queue (the newer replacing the older), and
	// worker goes ahead on its own.
	gt.send(testScaleRequest("ev2", "web", 5))
	gt.send(testScaleRequest("ev3", "web", 1))
	gt.send(testScaleRequest("ev4", "worker", 1))
	started("launch worker")

	select {
	case op := <-gt.scaler.started:
		t.Fatalf("%s started while web was busy", op)
	case <-time.After(50 * time.Millisecond):
	}

	close(gt.scaler.gate)
	gt.g.wait()

	ops := gt.scaler.opList()
	var web []string
	for _, op := range ops {
		if strings.HasPrefix(op, "launch web/") || strings.HasPrefix(op, "delete web/") {
			web = append(web, op)
		}
	}

	if !slices.Equal(web, []string{"launch web/web-*", "delete web/web-*"}) || !slices.Contains(ops, "launch worker/worker-*") {
		t.Errorf("ops %q\n%s", ops, gt.logs)
	}

	gt.wantLog(`msg="superseded before it was acted on" shape=web event=ev2 trigger=scale-request by=ev3`)
}

func TestGovernorBoundsStopTheRound(t *testing.T) {
	gt := newGovernorTest(t, &policy.Policy{}, false)
	gt.scaler.addShape("web", 1, 0, 10)
	gt.scaler.refuseLaunchesAfter = 2

	gt.send(testScaleRequest("ev1", "web", 6))
	gt.g.wait()

	// Two launched, the third refused, the other two never tried.
	gt.wantOps("launch web/web-*", "launch web/web-*", "launch web/web-*")
	gt.wantLog("launch refused by lxd-deployd, round stopped", "at its scaling maximum")
}

// A launch refused at the maximum while an instance is still being deleted is tried again
// until the delete is over; nothing else of the round is lost.
func TestGovernorRetriesLaunchWhileDeleting(t *testing.T) {
	gt := newGovernorTest(t, &policy.Policy{}, false)
	gt.scaler.addShape("web", 1, 0, 2)
	gt.scaler.instances["web"] = append(gt.scaler.instances["web"], api.DeploymentInstance{Name: "web-going", Shape: "web", State: rules.Deleting})
	gt.scaler.deletingFor = 2

	gt.send(testScaleRequest("ev1", "web", 2))
	gt.g.wait()
	gt.wantOps("launch web/web-*", "launch web/web-*", "launch web/web-*")
	if current := gt.scaler.shapes["web"].ScalingCurrent; current != 2 {
		t.Fatalf("the launch must succeed once the delete is over: scaling_current %d\n%s", current, gt.logs)
	}
}

func TestGovernorScalesDownNewestFirst(t *testing.T) {
	gt := newGovernorTest(t, &policy.Policy{}, false)
	gt.scaler.addShape("web", 4, 1, 5)

	gt.send(testScaleRequest("ev1", "web", 2))
	gt.g.wait()
	gt.wantOps("delete web/web4", "delete web/web3")

	// Down to the minimum only: the request is clamped.
	gt.send(testScaleRequest("ev2", "web", 0))
	gt.g.wait()
	gt.wantOps("delete web/web4", "delete web/web3", "delete web/web2")
	gt.wantLog(`current=2 desired=1 action=scale-down why="scale-request from unix: target 0 (\"test\"); raised to scaling_minimum 1"`)
}

func TestGovernorTracksCPU(t *testing.T) {
	gt := newGovernorTest(t, governorCPUPolicy(), false)
	gt.scaler.addShape("web", 2, 1, 5)
	gt.scaler.addShape("db", 1, 1, 1)

	gt.send(testMetrics("m1", map[string]api.WebhookShapeMetrics{
		"web": testShapeMetrics("web", 2, 1, 5, 0.9, 0.9),
		"db":  testShapeMetrics("db", 1, 1, 1, 0.9),
	}))
	gt.g.wait()
	gt.wantOps("launch web/web-*", "launch web/web-*")
	gt.wantLog(`shape=web event=m1 trigger=metrics current=2 desired=4 action=scale-up why="cpu observed 0.9 vs target 0.5"`)

	// db has no cpu target: no decision in the log at info.
	if strings.Contains(gt.logs.String(), "shape=db") {
		t.Errorf("db decision logged:\n%s", gt.logs)
	}

	// Within the cooldown, the next metrics change nothing.
	gt.advance(10 * time.Second)
	gt.send(testMetrics("m2", map[string]api.WebhookShapeMetrics{"web": testShapeMetrics("web", 4, 1, 5, 0.9, 0.9, 0.9, 0.9)}))
	gt.g.wait()
	gt.wantOps("launch web/web-*", "launch web/web-*")
	gt.wantLog(`event=m2 trigger=metrics current=4 desired=4 action=none why="cooldown: scale up to 5 held, last scaling 10s ago, scale_up_cooldown 30s`)

	// No cpu data: no decision.
	gt.send(testMetrics("m3", map[string]api.WebhookShapeMetrics{"web": testShapeMetrics("web", 4, 1, 5)}))
	gt.g.wait()
	gt.wantLog(`event=m3 trigger=metrics current=4 desired=4 action=none why="no cpu data`)
}

func TestGovernorDropsStaleMetrics(t *testing.T) {
	gt := newGovernorTest(t, governorCPUPolicy(), false)
	gt.scaler.addShape("web", 3, 1, 5)

	// The metrics were taken at 2 instances; there are 3 now.
	gt.send(testMetrics("m1", map[string]api.WebhookShapeMetrics{"web": testShapeMetrics("web", 2, 1, 5, 0.9, 0.9)}))
	gt.g.wait()
	gt.wantOps()
	gt.wantLog("decision dropped: the shape changed since the metrics were taken", "then=2 now=3")
}

func TestGovernorDryRun(t *testing.T) {
	gt := newGovernorTest(t, governorCPUPolicy(), true)
	gt.scaler.addShape("web", 2, 1, 5)

	gt.send(testMetrics("m1", map[string]api.WebhookShapeMetrics{"web": testShapeMetrics("web", 2, 1, 5, 0.1, 0.1)}))
	gt.send(testScaleRequest("ev1", "web", 4))
	gt.g.wait()
	gt.wantOps()
	gt.wantLog(
		`event=ev1 trigger=scale-request current=2 desired=4 action=scale-up why="scale-request from unix: target 4 (\"test\")" dry_run=true`,
		`event=m1 trigger=metrics current=2 desired=1 action=scale-down why="cpu observed 0.1 vs target 0.5" dry_run=true`,
	)
}

func TestGovernorIgnoresScaleRequestsWhenTold(t *testing.T) {
	p := governorCPUPolicy()
	web := p.Shapes["web"]
	web.FollowScaleRequests = false
	p.Shapes["web"] = web
	gt := newGovernorTest(t, p, false)
	gt.scaler.addShape("web", 2, 1, 5)

	gt.send(testScaleRequest("ev1", "web", 4))
	gt.g.wait()
	gt.wantOps()
	gt.wantLog("ignored: follow_scale_requests is false")
}

func TestGovernorOtherEvents(t *testing.T) {
	gt := newGovernorTest(t, &policy.Policy{}, false)
	for _, e := range []api.WebhookEvent{
		testEvent("l1", api.WebhookLifecycle, api.WebhookLifecycleMetadata{Action: "deployment-instance-missing", Shape: "web", Instance: "web1"}),
		testEvent("p1", api.WebhookPing, map[string]any{}),
		testEvent("x1", "something-new", map[string]any{}),
	} {
		if status := gt.send(e); status != http.StatusAccepted {
			t.Errorf("%s: %d", e.Type, status)
		}
	}

	gt.g.wait()
	gt.wantOps()
	gt.wantLog("msg=lifecycle event=l1 type=lifecycle action=deployment-instance-missing shape=web instance=web1", "msg=ping event=p1", "event type unknown to this governor, ignored")

	// The scale request of a shape that does not exist is logged and dropped.
	gt.send(testScaleRequest("ev1", "gone", 2))
	gt.g.wait()
	gt.wantLog(`msg="cannot read the shape, scale request dropped" shape=gone event=ev1 trigger=scale-request err="shape not found"`)
}

func TestNewInstanceName(t *testing.T) {
	// Bytes 252 to 255 are skipped so that every character is equally likely; then
	// 'a' (97) is 97%36 = 25, "z", 'b' is "0", and so on.
	name, err := newInstanceName("web", strings.NewReader(strings.Repeat("\xff\xfc", 8)+"abcdefghijklmnop"))
	if err != nil || name != "web-z01234" {
		t.Errorf("%q %v", name, err)
	}

	pattern := regexp.MustCompile(`^web-[a-z0-9]{6}$`)
	seen := map[string]bool{}
	for range 100 {
		name, err := newInstanceName("web", rand.Reader)
		if err != nil || !pattern.MatchString(name) || validate.Name("instance", name) != nil {
			t.Fatalf("%q %v", name, err)
		}

		seen[name] = true
	}

	if len(seen) < 99 {
		t.Errorf("%d distinct names out of 100", len(seen))
	}

	long := strings.Repeat("a", 55) + "-" + strings.Repeat("b", 7)
	name, err = newInstanceName(long, bytes.NewReader(bytes.Repeat([]byte{1}, 16)))
	if err != nil || len(name) > 63 || validate.Name("instance", name) != nil || !strings.HasPrefix(name, strings.Repeat("a", 55)+"-") {
		t.Errorf("long shape: %q (%d) %v", name, len(name), err)
	}

	_, err = newInstanceName("web", strings.NewReader("abc"))
	if err == nil {
		t.Error("short random source accepted")
	}
}

func TestGovernorFlags(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "secret")
	err := os.WriteFile(secretFile, []byte("  abc\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}

	secret, err := (&governorFlags{secretFile: secretFile}).readSecret()
	if err != nil || secret != "abc" {
		t.Errorf("secret file: %q %v", secret, err)
	}

	for _, f := range []governorFlags{{}, {secret: "a", secretFile: secretFile}, {secretFile: filepath.Join(dir, "none")}} {
		_, err := f.readSecret()
		if err == nil {
			t.Errorf("%+v accepted", f)
		}
	}

	a := &app{project: "default"}
	for _, test := range []struct {
		flags governorFlags
		want  string
	}{
		{governorFlags{}, "say how to reach lxd-deployd"},
		{governorFlags{remote: "https://h:8444", socket: "/s"}, "exclusive"},
		{governorFlags{remote: "https://h:8444"}, "--cert and --key"},
		{governorFlags{socket: "/s"}, "--cert and --key"},
		{governorFlags{socket: "/s", serverCert: "x"}, "--server-cert is for --remote"},
		{governorFlags{remote: "prod", cert: "x"}, "configured remote"},
	} {
		_, err := a.governorConnect(&test.flags)
		if err == nil || !strings.Contains(err.Error(), test.want) {
			t.Errorf("%+v: %v, want %q", test.flags, err, test.want)
		}
	}
}

func TestGovernorCommands(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "policy.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	_ = os.WriteFile(good, []byte("shapes:\n  web:\n    cpu_target: 0.5\n    scale_up_cooldown: 30s\n"), 0o600)
	_ = os.WriteFile(bad, []byte("shapes:\n  web:\n    cpu_target: 0.5\n    scale_up_cooldown: 30\n"), 0o600)

	run := func(args ...string) (string, error) {
		var stdout bytes.Buffer
		a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stdout}
		root := a.command()
		root.SetArgs(args)
		err := root.Execute()
		return stdout.String(), err
	}

	out, err := run("governor", "policy-check", good)
	if err != nil || !strings.Contains(out, "is valid (1 shapes)") || !strings.Contains(out, "web: follows scale requests, cpu target 0.5 cores per instance") || !strings.Contains(out, "other shapes: follows scale requests, no cpu target tracking") {
		t.Errorf("policy-check: %q %v", out, err)
	}

	_, err = run("governor", "policy-check", bad)
	if err == nil || !strings.Contains(err.Error(), "bad.yaml") || !strings.Contains(err.Error(), "needs a unit") {
		t.Errorf("bad policy: %v", err)
	}

	_, err = run("governor", "run", "--deployment", "dep1")
	if err == nil || !strings.Contains(err.Error(), "listen") {
		t.Errorf("run without --listen: %v", err)
	}

	_, err = run("governor", "run", "--deployment", "1dep", "--listen", "127.0.0.1:0", "--secret", "x")
	if err == nil || !strings.Contains(err.Error(), "deployment name") {
		t.Errorf("run with a bad deployment name: %v", err)
	}

	_, err = run("governor", "run", "--deployment", "dep1", "--listen", "127.0.0.1:0", "--secret", "x", "--policy", bad)
	if err == nil || !strings.Contains(err.Error(), "needs a unit") {
		t.Errorf("run with a bad policy: %v", err)
	}
}
