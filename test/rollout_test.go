package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// rolloutEnv is a governor env whose shape web is rolled out. Rollouts name their
// instances web-r<rev>-<random>, outside the env's prefix, so the shape (and all its
// instances) is force-deleted through the daemon at the end.
func newRolloutEnv(t *testing.T, min int, max int, extraArgs ...string) *governorEnv {
	t.Helper()
	env := newGovernorEnv(t, min, max, extraArgs...)
	t.Cleanup(func() {
		_ = env.admin.DeleteDeploymentShape("dep1", "web", true)
		env.cleanupRollouts(t)
	})

	return env
}

// cleanupRollouts deletes the rollout-named instances of dep1 left in LXD (after a crash
// test, say), so they do not outlive the test.
func (env *governorEnv) cleanupRollouts(t testing.TB) {
	instances, err := env.lxdConn.GetInstances(lxdapi.InstanceTypeAny)
	if err != nil {
		return
	}

	for _, instance := range instances {
		if !strings.HasPrefix(instance.Name, "web-r") || instance.Config["user.lxd-deployd.deployment"] != "dep1" {
			continue
		}

		env.removeFromLXD(instance)
	}
}

// updateShape changes shape web through PUT, with notes.
func (env *governorEnv) updateShape(t testing.TB, notes string, change func(put *api.DeploymentShapePut)) {
	t.Helper()
	shape, etag, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	put := shape.Writable()
	change(&put)
	_, _, err = env.admin.Query(http.MethodPut, "/1.0/deployments/dep1/shapes/web?notes="+url.QueryEscape(notes), put, etag)
	must(t, err)
}

// setVersion makes the template set user.version, which new instances carry.
func setVersion(version string) func(put *api.DeploymentShapePut) {
	return func(put *api.DeploymentShapePut) {
		put.InstanceTemplate.Config = map[string]string{"user.version": version}
	}
}

// scaleTo launches instances through the governor until the shape has n.
func (env *governorEnv) scaleTo(t testing.TB, n int) []string {
	t.Helper()
	var names []string
	var ops []interface{ Wait(context.Context) error }
	for i := 0; i < n; i++ {
		name := env.name(fmt.Sprintf("i%d", i))
		op, err := env.gov.CreateDeploymentShapeInstance("dep1", "web", name)
		must(t, err)
		ops = append(ops, op)
		names = append(names, name)
	}

	for _, op := range ops {
		must(t, op.Wait(context.Background()))
	}

	return names
}

// waitRollout waits until rollout n of web is in one of the statuses.
func (env *governorEnv) waitRollout(t testing.TB, n int, timeout time.Duration, statuses ...string) *api.DeploymentRollout {
	t.Helper()
	var r *api.DeploymentRollout
	var err error
	env.waitUntil(t, fmt.Sprintf("rollout %d %v", n, statuses), timeout, func() bool {
		r, err = env.admin.GetDeploymentShapeRollout("dep1", "web", n)
		return err == nil && slices.Contains(statuses, r.Status)
	}, showing(func() string { return fmt.Sprintf("it is %+v (err %v)", r, err) }))
	return r
}

// waitFirstReplacement waits until rollout n of web has made its first replacement, for
// tests that act on a rollout caught half way (pause it, kill the daemon).
func (env *governorEnv) waitFirstReplacement(t testing.TB, n int) {
	t.Helper()
	var r *api.DeploymentRollout
	waitUntil(t, "a replacement started", time.Minute, func() bool {
		var err error
		r, err = env.admin.GetDeploymentShapeRollout("dep1", "web", n)
		must(t, err)
		return r.Updated >= 1
	}, every(50*time.Millisecond), showing(func() string { return fmt.Sprintf("%+v", r) }))
}

// versions returns the user.version each of the shape's LXD instances runs with, and
// checks that the records say they are current.
func (env *governorEnv) versions(t testing.TB) map[string]string {
	t.Helper()
	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	out := map[string]string{}
	for _, i := range instances {
		live, _, err := env.lxdConn.GetInstance(i.Name)
		must(t, err)
		out[i.Name] = live.Config["user.version"]
		if i.Outdated {
			out[i.Name] += " (outdated)"
		}
	}

	return out
}

// actionLog collects lifecycle actions heard from several goroutines.
type actionLog struct {
	mu      sync.Mutex
	actions []string
}

func (l *actionLog) add(action string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.actions = append(l.actions, action)
}

func (l *actionLog) has(action string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.actions, action)
}

func (l *actionLog) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string{}, l.actions...)
}

func TestShapeRevisionsAndOutdated(t *testing.T) {
	env := newRolloutEnv(t, 0, 3)
	first := env.name("a")
	env.launch(t, env.gov, first)

	env.updateShape(t, "v2 for new instances", setVersion("2"))
	second := env.name("b")
	env.launch(t, env.gov, second)

	// New launches use the new template; older instances say they are outdated.
	instances, err := env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	byName := map[string]api.DeploymentInstance{}
	for _, i := range instances {
		byName[i.Name] = i
	}

	if byName[first].Revision != 1 || !byName[first].Outdated || byName[second].Revision != 2 || byName[second].Outdated {
		t.Fatalf("instances: %+v", instances)
	}

	live, _, err := env.lxdConn.GetInstance(second)
	must(t, err)
	if live.Config["user.version"] != "2" {
		t.Fatalf("the new instance was not made from revision 2: %v", live.Config)
	}

	shape, _, err := env.admin.GetDeploymentShape("dep1", "web")
	must(t, err)
	revisions, err := env.admin.GetDeploymentShapeRevisions("dep1", "web")
	must(t, err)
	if shape.Revision != 2 || len(revisions) != 2 || revisions[0].Revision != 2 || revisions[0].Cause != "api" || revisions[0].Notes != "v2 for new instances" ||
		revisions[0].Requestor.Protocol != "unix" || revisions[1].Cause != "api" || revisions[0].Instances != 1 {
		t.Fatalf("shape revision %d, revisions %+v", shape.Revision, revisions)
	}

	diff, err := env.admin.GetDeploymentShapeRevisionDiff("dep1", "web", 2, 1)
	must(t, err)
	if len(diff.Changes) != 1 || diff.Changes[0].Field != "instance_template.config.user.version" || diff.Changes[0].New != "2" {
		t.Fatalf("diff: %+v", diff)
	}

	// A bounds change is a revision too, but the instances it leaves as they are stay current.
	env.updateShape(t, "", func(put *api.DeploymentShapePut) { put.ScalingMaximum = 4 })
	instances, err = env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	for _, i := range instances {
		if (i.Name == second) == i.Outdated {
			t.Fatalf("after a bounds change: %+v", i)
		}
	}

	// Rolling back to a revision whose image LXD no longer has is refused, changing nothing.
	env.updateShape(t, "", func(put *api.DeploymentShapePut) { put.InstanceTemplate.Source.Alias = "no-such-image" })
	env.updateShape(t, "", func(put *api.DeploymentShapePut) { put.InstanceTemplate.Source.Alias = "busybox" })
	_, err = env.admin.RollbackDeploymentShape("dep1", "web", api.DeploymentShapeRollbackPost{Revision: 4})
	expectCode(t, err, 400, "rollback to a revision whose image is gone")
	_, err = env.admin.RollbackDeploymentShape("dep1", "web", api.DeploymentShapeRollbackPost{Revision: 99})
	expectCode(t, err, 404, "rollback to an unknown revision")

	// Rollback to 1 is a new revision; without a config-change trigger it says the running
	// instances stay as they are.
	result, err := env.admin.RollbackDeploymentShape("dep1", "web", api.DeploymentShapeRollbackPost{Revision: 1, Notes: "back to v1"})
	must(t, err)
	if result.Revision != 6 || result.Rollout != 0 || !strings.Contains(result.Message, "start a rollout") {
		t.Fatalf("rollback: %+v", result)
	}

	rev, err := env.admin.GetDeploymentShapeRevision("dep1", "web", 6)
	must(t, err)
	if rev.Cause != "rollback to 1" || rev.Notes != "back to v1" || rev.Shape.InstanceTemplate.Config["user.version"] != "" || rev.Shape.ScalingMaximum != 4 {
		t.Fatalf("rollback revision: %+v", rev)
	}

	// The first instance runs what revision 1 made: it is current again.
	instances, err = env.admin.GetDeploymentShapeInstances("dep1", "web")
	must(t, err)
	for _, i := range instances {
		if (i.Name == first) == i.Outdated {
			t.Fatalf("after rollback to 1: %+v", i)
		}
	}

	// The activity log answers "why does my shape have 2 instances".
	activity, err := env.admin.GetDeploymentActivity("dep1", 0, "web")
	must(t, err)
	var log []string
	for _, a := range activity {
		log = append(log, fmt.Sprintf("%s %d->%d %s", a.Action, a.From, a.To, a.Who))
	}

	joined := strings.Join(log, "; ")
	for _, want := range []string{"revision 0->1 admin", "scale-up 0->1 governor", "revision 1->2 admin", "scale-up 1->2 governor", "rollback 5->6 admin"} {
		if !strings.Contains(joined, want) {
			t.Fatalf("activity lacks %q: %s", want, joined)
		}
	}

	since, err := env.admin.GetDeploymentActivity("dep1", activity[len(activity)-2].ID, "")
	must(t, err)
	if len(since) != 1 {
		t.Fatalf("?since= returned %d entries, want 1", len(since))
	}
}

// sampleBounds samples the shape's instances until stop is closed and reports the fewest
// ready (created and Running) and the most counted (creating or created) it saw.
func (env *governorEnv) sampleBounds(t testing.TB, stop <-chan struct{}) (fewestReady int, most int, samples int) {
	return sampleInstanceBounds(stop, func() ([]api.DeploymentInstance, error) {
		return env.admin.GetDeploymentShapeInstances("dep1", "web")
	})
}

// sampleInstanceBounds reads the instances every 100 ms until stop is closed (a read that
// fails is no sample) and reports the fewest ready (created and Running) and the most
// counted (creating or created) it saw.
func sampleInstanceBounds(stop <-chan struct{}, read func() ([]api.DeploymentInstance, error)) (fewestReady int, most int, samples int) {
	fewestReady = 1 << 30
	for {
		instances, err := read()
		if err == nil {
			ready, counted := 0, 0
			for _, i := range instances {
				if i.State == "created" && i.Status == "Running" {
					ready++
				}

				if i.State == "created" || i.State == "creating" {
					counted++
				}
			}

			fewestReady, most, samples = min(fewestReady, ready), max(most, counted), samples+1
		}

		select {
		case <-stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestRollingRolloutKeepsReadyAndBounds(t *testing.T) {
	env := newRolloutEnv(t, 0, 5)
	env.scaleTo(t, 4)
	env.updateShape(t, "", func(put *api.DeploymentShapePut) {
		setVersion("2")(put)
		put.Rollout = api.DeploymentShapeRollout{MaxSurge: "1", MaxUnavailable: "0", MinReady: "1s"}
	})

	// The governor hears every step on its webhook, and /1.0/events shows them.
	heard := &actionLog{}
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var event api.WebhookEvent
		var lifecycle api.WebhookLifecycleMetadata
		if json.NewDecoder(r.Body).Decode(&event) == nil && event.Type == api.WebhookLifecycle && json.Unmarshal(event.Metadata, &lifecycle) == nil {
			heard.add("webhook " + lifecycle.Action)
		}
	}))
	defer hook.Close()
	deployment, etag, err := env.admin.GetDeployment("dep1")
	must(t, err)
	put := deployment.Writable()
	put.GovernorWebhookURL = hook.URL
	must(t, env.admin.UpdateDeployment("dep1", put, etag))
	admin := newIdentity(t)
	trustIdentity(t, env.admin, admin, "events", "client")
	lxdClient, err := lxd.ConnectLXD("https://"+env.d.HTTPSAddress, &lxd.ConnectionArgs{TLSServerCert: env.d.ServerCert, TLSClientCert: admin.CertPEM, TLSClientKey: admin.KeyPEM})
	must(t, err)
	listener, err := lxdClient.GetEvents()
	must(t, err)
	defer listener.Disconnect()
	_, err = listener.AddHandler([]string{"lifecycle"}, func(e lxdapi.Event) {
		var lifecycle lxdapi.EventLifecycle
		if json.Unmarshal(e.Metadata, &lifecycle) == nil {
			heard.add("event " + lifecycle.Action)
		}
	})
	must(t, err)

	stop := make(chan struct{})
	type result struct{ fewest, most, samples int }
	sampled := make(chan result)
	go func() {
		f, m, n := env.sampleBounds(t, stop)
		sampled <- result{f, m, n}
	}()

	op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{Notes: "ship v2"})
	must(t, err)
	_, err = env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	expectCode(t, err, 409, "a second rollout while one runs")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err = op.Wait(ctx)
	close(stop)
	bounds := <-sampled
	must(t, err)
	if bounds.fewest < 4 || bounds.most > 5 {
		t.Fatalf("during the rollout: fewest ready %d (want >= 4), most instances %d (want <= 5) over %d samples", bounds.fewest, bounds.most, bounds.samples)
	}

	t.Logf("rolling rollout: fewest ready %d, most instances %d over %d samples", bounds.fewest, bounds.most, bounds.samples)
	versions := env.versions(t)
	if len(versions) != 4 {
		t.Fatalf("after the rollout: %v", versions)
	}

	for name, v := range versions {
		if v != "2" || !strings.HasPrefix(name, "web-r2-") {
			t.Fatalf("after the rollout: %v", versions)
		}
	}

	r := env.waitRollout(t, 1, time.Second, "complete")
	if r.Cause != "api" || r.Notes != "ship v2" || r.Updated != 4 || r.Outdated != 0 || r.FinishedAt == nil {
		t.Fatalf("rollout: %+v", r)
	}

	activity, err := env.admin.GetDeploymentActivity("dep1", 0, "web")
	must(t, err)
	counts := map[string]int{}
	for _, a := range activity {
		counts[a.Action+"/"+a.Who]++
	}

	if counts["rollout-started/admin"] != 1 || counts["scale-up/rollout"] != 4 || counts["scale-down/rollout"] != 4 || counts["rollout-complete/rollout"] != 1 {
		t.Fatalf("activity: %v", counts)
	}

	unheard := ""
	waitUntil(t, "the governor hearing every rollout action by webhook and event", 30*time.Second, func() bool {
		for _, want := range []string{"deployment-shape-rollout-started", "deployment-shape-rollout-step", "deployment-shape-rollout-completed", "deployment-instance-created", "deployment-instance-deleted"} {
			for _, via := range []string{"webhook ", "event "} {
				if !heard.has(via + want) {
					unheard = via + want
					return false
				}
			}
		}

		return true
	}, every(100*time.Millisecond), showing(func() string { return fmt.Sprintf("it did not hear %s: %v", unheard, heard.all()) }))

	// Rollback to revision 1, then a rollout, restores the original template everywhere.
	_, err = env.admin.RollbackDeploymentShape("dep1", "web", api.DeploymentShapeRollbackPost{Revision: 1})
	must(t, err)
	op, err = env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	must(t, err)
	must(t, op.Wait(ctx))
	for name, v := range env.versions(t) {
		if v != "" {
			t.Fatalf("after rollback and rollout, %s runs version %q", name, v)
		}
	}
}
