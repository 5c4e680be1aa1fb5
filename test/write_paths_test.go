package test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"gopkg.in/yaml.v2"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/test/lxdtest"
)

// writeField is one writable field of a shape, changed inside a value the shape already
// has (a key of an existing map, a field of an existing struct): the change a PATCH
// decoded onto a shallow copy of the shape used to lose.
type writeField struct {
	name     string
	change   func(put *api.DeploymentShapePut)
	patch    string   // the same change as a PATCH body
	set      []string // the same change as `lxd-deploy deployment shape set` arguments; nil: set cannot make it
	outdated bool     // whether instances made before turn outdated (doc/rollouts.md)
}

var writeFields = []writeField{
	{"description", func(p *api.DeploymentShapePut) { p.Description = "changed" }, `{"description":"changed"}`, []string{"description=changed", "--property"}, false},
	{"config key", func(p *api.DeploymentShapePut) { p.Config["user.a"] = "2" }, `{"config":{"user.a":"2"}}`, []string{"user.a=2"}, true},
	{"template config", func(p *api.DeploymentShapePut) { p.InstanceTemplate.Config["user.v"] = "2" }, `{"instance_template":{"config":{"user.v":"2"}}}`, nil, true},
	{"template devices", func(p *api.DeploymentShapePut) { p.InstanceTemplate.Devices["d2"] = map[string]string{"type": "none"} }, `{"instance_template":{"devices":{"d2":{"type":"none"}}}}`, nil, true},
	{"template profiles", func(p *api.DeploymentShapePut) { p.InstanceTemplate.Profiles = []string{"default", "extra"} }, `{"instance_template":{"profiles":["default","extra"]}}`, nil, true},
	{"template source", func(p *api.DeploymentShapePut) { p.InstanceTemplate.Source.Alias = "busybox-next" }, `{"instance_template":{"source":{"alias":"busybox-next"}}}`, nil, true},
	{"bounds", func(p *api.DeploymentShapePut) { p.ScalingMaximum = 4 }, `{"scaling_maximum":4}`, []string{"scaling_maximum=4", "--property"}, false},
	{"rollout", func(p *api.DeploymentShapePut) { p.Rollout.MaxSurge = "2" }, `{"rollout":{"max_surge":2}}`, nil, false},
	{"health", func(p *api.DeploymentShapePut) { p.Health.Command = []string{"true", "changed"} }, `{"health":{"command":["true","changed"]}}`, nil, false},
	{"hooks", func(p *api.DeploymentShapePut) { p.Hooks.DefaultAction = "abandon" }, `{"hooks":{"default_action":"abandon"}}`, nil, false},
	{"warm pool", func(p *api.DeploymentShapePut) { p.WarmPool.ReuseOnScaleIn = true }, `{"warm_pool":{"reuse_on_scale_in":true}}`, nil, false},
	{"resource bounds", func(p *api.DeploymentShapePut) {
		p.ResourceBounds[api.LimitMemory] = api.DeploymentShapeResourceBound{Minimum: "64MiB", Maximum: "2GiB"}
	}, `{"resource_bounds":{"limits.memory":{"maximum":"2GiB"}}}`, nil, false},
	{"placement", func(p *api.DeploymentShapePut) { p.Placement.Rigor = "strict" }, `{"placement":{"rigor":"strict"}}`, nil, false},
	{"schedule", func(p *api.DeploymentShapePut) { p.Schedule[0].Cron = "0 1 29 2 *" }, `{"schedule":[{"name":"business-hours","cron":"0 1 29 2 *","time_zone":"Europe/Paris","scaling_minimum":0,"scaling_maximum":3}]}`, nil, false},
}

// The bounds of the baseline's scheduled action: the baseline's own, so that even the
// action firing (midnight on 29 February, Paris) would change no field.
var scheduleMinimum, scheduleMaximum = 0, 3

// writePathsBaseline is shape web before each change: every map and pointer field set, so
// that each change lands inside an existing value.
func writePathsBaseline() api.DeploymentShapePut {
	put := api.DeploymentShapePut{
		Description:    "web",
		Config:         map[string]string{"user.a": "1"},
		ScalingMinimum: 0,
		ScalingMaximum: 3,
		Rollout:        api.DeploymentShapeRollout{Strategy: "rolling", MaxSurge: "1"},
		Health:         &api.DeploymentShapeHealth{Command: []string{"true"}, Interval: "1h"},
		Hooks:          &api.DeploymentShapeHooks{DefaultAction: "continue"},
		WarmPool:       &api.DeploymentShapeWarmPool{Size: 0},
		ResourceBounds: map[string]api.DeploymentShapeResourceBound{api.LimitMemory: {Minimum: "64MiB", Maximum: "1GiB"}},
		Placement:      &api.DeploymentShapePlacement{Spread: "member"},
		Schedule:       []api.DeploymentShapeScheduledAction{{Name: "business-hours", Cron: "0 0 29 2 *", TimeZone: "Europe/Paris", ScalingMinimum: &scheduleMinimum, ScalingMaximum: &scheduleMaximum}},
	}

	put.InstanceTemplate.Source = lxdapi.InstanceSource{Type: "image", Alias: lxdtest.Image}
	put.InstanceTemplate.Config = map[string]string{"user.v": "1"}
	put.InstanceTemplate.Devices = map[string]map[string]string{"d1": {"type": "none"}}
	put.InstanceTemplate.Profiles = []string{"default"}
	return put
}

// deepCopy copies a shape's writable fields through JSON, as the daemon stores them.
func deepCopy(t testing.TB, put api.DeploymentShapePut) api.DeploymentShapePut {
	t.Helper()
	data, err := json.Marshal(put)
	must(t, err)
	var out api.DeploymentShapePut
	must(t, json.Unmarshal(data, &out))
	return out
}

// shapeConfig is a deployment config (doc/templates.md) holding shape web as put.
func shapeConfig(t testing.TB, put api.DeploymentShapePut) string {
	t.Helper()
	data, err := json.Marshal(put)
	must(t, err)
	var properties map[string]any
	must(t, json.Unmarshal(data, &properties))
	out, err := yaml.Marshal(map[string]any{"resources": []any{map[string]any{"name": "web", "type": "shape", "properties": properties}}})
	must(t, err)
	return string(out)
}

// lifecycleLog collects the daemon's lifecycle events.
type lifecycleLog struct {
	mu     sync.Mutex
	events []lxdapi.EventLifecycle
}

func (l *lifecycleLog) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.events)
}

// waitFor waits for an event with action and source after the first `after` events.
func (l *lifecycleLog) waitFor(t testing.TB, after int, action string, source string) {
	t.Helper()
	var seen []string
	waitUntil(t, fmt.Sprintf("a %s event for %s", action, source), 10*time.Second, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		seen = nil
		for _, e := range l.events[after:] {
			if e.Action == action && e.Source == source {
				return true
			}

			seen = append(seen, e.Action+" "+e.Source)
		}

		return false
	}, every(20*time.Millisecond), showing(func() string { return fmt.Sprintf("saw %v", seen) }))
}

// TestEveryWritePathMakesTheSameRevision changes every writable field of a shape through
// every write path (PUT, PATCH, `lxd-deploy deployment shape set` and `edit`, a templated
// apply) and checks that each makes the same revision: the stored shape, the revision's
// content and cause, the activity entry, the `outdated` flag of an instance running in
// LXD, and the deployment-shape-updated event.
func TestEveryWritePathMakesTheSameRevision(t *testing.T) {
	t.Parallel()
	private := lxdtest.Shared(t)
	d := startDaemon(t, daemonOptions{LXDSocket: private.Socket})
	waitLXDOnline(t, d)
	admin := d.Unix(t)
	u := newCLIUser(t, d)
	lxdConn := private.Client(t)

	var events lifecycleLog
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() {
		_ = admin.GetEvents(ctx, client.EventsArgs{Types: []string{"lifecycle"}}, func(e lxdapi.Event) {
			var lifecycle lxdapi.EventLifecycle
			if json.Unmarshal(e.Metadata, &lifecycle) == nil {
				events.mu.Lock()
				events.events = append(events.events, lifecycle)
				events.mu.Unlock()
			}
		})
	}()

	// dep1's shape web comes from a templated apply, so that later applies update it.
	baseline := writePathsBaseline()
	must(t, admin.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "dep1"}}))
	apply := func(put api.DeploymentShapePut) {
		t.Helper()
		dep, etag, err := admin.GetDeployment("dep1")
		must(t, err)
		dput := dep.Writable()
		dput.Template = shapeConfig(t, put)
		_, err = admin.ApplyDeploymentTemplate("dep1", dput, etag, client.ApplyOptions{})
		must(t, err)
	}

	apply(baseline)
	t.Cleanup(func() { _ = admin.DeleteDeploymentShape("dep1", "web", true) })
	instance := "twritepaths-i1"
	op, err := admin.CreateDeploymentShapeInstance("dep1", "web", instance)
	must(t, err)
	must(t, op.Wait(context.Background()))
	t.Cleanup(func() {
		if op, err := lxdConn.UpdateInstanceState(instance, lxdapi.InstanceStatePut{Action: "stop", Force: true, Timeout: -1}, ""); err == nil {
			_ = op.Wait()
		}

		if op, err := lxdConn.DeleteInstance(instance); err == nil {
			_ = op.Wait()
		}
	})

	state, _, err := lxdConn.GetInstanceState(instance)
	must(t, err)
	if state.Status != "Running" {
		t.Fatalf("LXD has %s %s, want it running", instance, state.Status)
	}

	shapeSource := api.DeploymentShapeURL(api.DefaultProject, "dep1", "web")
	paths := []struct {
		name  string
		cause string // the revision's cause, or its prefix for an apply (apply manifest-<n>)
		write func(t *testing.T, f writeField, want api.DeploymentShapePut)
	}{
		{"PUT", "api", func(t *testing.T, f writeField, want api.DeploymentShapePut) {
			_, etag, err := admin.GetDeploymentShape("dep1", "web")
			must(t, err)
			_, _, err = admin.Query(http.MethodPut, "/1.0/deployments/dep1/shapes/web?notes="+url.QueryEscape(f.name), want, etag)
			must(t, err)
		}},
		{"PATCH", "api", func(t *testing.T, f writeField, want api.DeploymentShapePut) {
			_, _, err := admin.Query(http.MethodPatch, "/1.0/deployments/dep1/shapes/web?notes="+url.QueryEscape(f.name), json.RawMessage(f.patch), "")
			must(t, err)
		}},
		{"CLI set", "api", func(t *testing.T, f writeField, want api.DeploymentShapePut) {
			u.ok(append([]string{"deployment", "shape", "set", "dep1", "web"}, f.set...)...)
		}},
		{"CLI edit", "api", func(t *testing.T, f writeField, want api.DeploymentShapePut) {
			data, err := yaml.Marshal(want)
			must(t, err)
			u.okWithStdin(string(data), "deployment", "shape", "edit", "dep1", "web")
		}},
		{"apply", "apply manifest-", func(t *testing.T, f writeField, want api.DeploymentShapePut) {
			apply(want)
		}},
	}

	wantJSON := func(t *testing.T, put api.DeploymentShapePut) string {
		data, err := json.Marshal(put)
		must(t, err)
		return string(data)
	}

	outdated := func(t *testing.T) bool {
		i, err := admin.GetDeploymentShapeInstance("dep1", "web", instance)
		must(t, err)
		return i.Outdated
	}

	for _, f := range writeFields {
		for _, path := range paths {
			if path.name == "CLI set" && f.set == nil {
				continue // set reaches config keys, the description and the bounds only
			}

			t.Run(f.name+"/"+path.name, func(t *testing.T) {
				want := deepCopy(t, baseline)
				f.change(&want)
				before, etag, err := admin.GetDeploymentShape("dep1", "web")
				must(t, err)
				if wantJSON(t, before.Writable()) != wantJSON(t, baseline) {
					// A case before this one failed half way: start from the baseline.
					must(t, admin.UpdateDeploymentShape("dep1", "web", baseline, etag))
					before, _, err = admin.GetDeploymentShape("dep1", "web")
					must(t, err)
				}

				seen := events.len()
				path.write(t, f, want)

				// The shape holds the change, under a new revision that holds it too.
				shape, _, err := admin.GetDeploymentShape("dep1", "web")
				must(t, err)
				if got := wantJSON(t, shape.Writable()); got != wantJSON(t, want) {
					t.Fatalf("shape after %s:\n%s\nwant\n%s", path.name, got, wantJSON(t, want))
				}

				if shape.Revision != before.Revision+1 {
					t.Fatalf("%s of %s: revision %d, want %d", path.name, f.name, shape.Revision, before.Revision+1)
				}

				revision, err := admin.GetDeploymentShapeRevision("dep1", "web", shape.Revision)
				must(t, err)
				if got := wantJSON(t, revision.Shape); got != wantJSON(t, want) {
					t.Fatalf("revision %d holds\n%s\nwant\n%s", shape.Revision, got, wantJSON(t, want))
				}

				if !strings.HasPrefix(revision.Cause, path.cause) || (path.cause == "api" && revision.Cause != "api") {
					t.Fatalf("revision %d cause %q, want %q", shape.Revision, revision.Cause, path.cause)
				}

				activity, err := admin.GetDeploymentActivity("dep1", 0, "web")
				must(t, err)
				found := false
				for _, a := range activity {
					found = found || a.Action == "revision" && a.From == before.Revision && a.To == shape.Revision
				}

				if !found {
					t.Fatalf("no activity entry for revision %d -> %d: %+v", before.Revision, shape.Revision, activity)
				}

				if got := outdated(t); got != f.outdated {
					t.Fatalf("after a change of %s through %s, instance outdated is %v, want %v", f.name, path.name, got, f.outdated)
				}

				events.waitFor(t, seen, "deployment-shape-updated", shapeSource)

				// Back to the baseline (a PUT): one more revision, and the instance current.
				_, etag, err = admin.GetDeploymentShape("dep1", "web")
				must(t, err)
				must(t, admin.UpdateDeploymentShape("dep1", "web", baseline, etag))
				back, _, err := admin.GetDeploymentShape("dep1", "web")
				must(t, err)
				if back.Revision != shape.Revision+1 || outdated(t) {
					t.Fatalf("back to the baseline: revision %d (want %d), outdated %v (want false)", back.Revision, shape.Revision+1, outdated(t))
				}
			})
		}
	}

	// All the while LXD kept running the instance.
	state, _, err = lxdConn.GetInstanceState(instance)
	must(t, err)
	if state.Status != "Running" {
		t.Fatalf("LXD has %s %s after the changes, want it running", instance, state.Status)
	}
}
