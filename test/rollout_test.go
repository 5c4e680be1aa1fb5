package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

func TestShapeRevisionsAndOutdated(t *testing.T) {
	t.Parallel()
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

func TestRollingRolloutKeepsReadyAndBounds(t *testing.T) {
	t.Parallel()
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
	env.d.onLifecycle(t, "events", func(lifecycle lxdapi.EventLifecycle) { heard.add("event " + lifecycle.Action) })

	stopSampling := env.startSamplingBounds(t)

	op, err := env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{Notes: "ship v2"})
	must(t, err)
	_, err = env.admin.CreateDeploymentShapeRollout("dep1", "web", api.DeploymentRolloutsPost{})
	expectCode(t, err, 409, "a second rollout while one runs")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	err = op.Wait(ctx)
	bounds := stopSampling()
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
