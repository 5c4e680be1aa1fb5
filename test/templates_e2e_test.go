package test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// tiersJinja makes one busybox shape per tier of its properties.
const tiersJinja = `resources:
{% for tier in properties['tiers'] %}
- name: {{ tier['name'] }}
  type: shape
  properties:
    description: {{ tier['name'] }} tier of {{ env['deployment'] }}
    config:
      user.tier: {{ tier['name'] }}
    instance_template:
      source: {type: image, alias: busybox}
    scaling_minimum: 0
    scaling_maximum: {{ tier['max'] }}
{% endfor %}
`

// tiersConfig is a config of the tiers template: tiers are "name:max".
func tiersConfig(tiers ...string) string {
	config := "resources:\n- name: app\n  type: tiers.jinja\n  properties:\n    tiers:\n"
	for _, tier := range tiers {
		name, max, _ := strings.Cut(tier, ":")
		config += "    - {name: " + name + ", max: " + max + "}\n"
	}

	return config
}

var tiersImports = map[string]string{"tiers.jinja": tiersJinja}

// shapeSummary is what a test checks of a deployment's shapes: name -> "max/current".
func shapeSummary(t testing.TB, c *client.Server, deployment string) map[string]string {
	t.Helper()
	shapes, err := c.GetDeploymentShapes(deployment)
	must(t, err)
	summary := map[string]string{}
	for _, s := range shapes {
		summary[s.Name] = strconv.Itoa(s.ScalingMaximum) + "/" + strconv.Itoa(s.ScalingCurrent)
	}

	return summary
}

// applyTemplate PUTs a config on a deployment, keeping its other fields.
func applyTemplate(t testing.TB, c *client.Server, deployment string, config string, opts client.ApplyOptions) (*api.DeploymentTemplatePlan, error) {
	t.Helper()
	d, etag, err := c.GetDeployment(deployment)
	must(t, err)
	put := d.Writable()
	put.Template = config
	put.TemplateImports = tiersImports
	return c.ApplyDeploymentTemplate(deployment, put, etag, opts)
}

func manifestNames(t testing.TB, c *client.Server, deployment string) []string {
	t.Helper()
	names, err := c.GetDeploymentManifestNames(deployment)
	must(t, err)
	return names
}

func TestTemplatesOnPrivateLXD(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3)
	admin := env.admin
	f1, b1 := env.name("f1"), env.name("b1")

	// The next version: front grows, back goes, extra comes.
	next := tiersConfig("front:5", "extra:1")
	var want map[string]string

	phase(t, "the first apply", func(t *testing.T) {
		// dep1 has the shape "web", made by hand: templates leave it alone.
		_, err := applyTemplate(t, admin, "dep1", tiersConfig("front:3", "back:2"), client.ApplyOptions{})
		must(t, err)
		want = map[string]string{"web": "3/0", "front": "3/0", "back": "2/0"}
		if got := shapeSummary(t, admin, "dep1"); !reflect.DeepEqual(got, want) {
			t.Fatalf("shapes after the first apply: %v, want %v", got, want)
		}

		front, _, err := admin.GetDeploymentShape("dep1", "front")
		must(t, err)
		if front.Description != "front tier of dep1" || front.Config["user.tier"] != "front" || front.InstanceTemplate.Source.Alias != "busybox" {
			t.Fatalf("front: %+v", front)
		}
	})

	phase(t, "the governor launches from template-made shapes", func(t *testing.T) {
		for _, launch := range []struct{ shape, name string }{{"front", f1}, {"back", b1}} {
			op, err := env.gov.CreateDeploymentShapeInstance("dep1", launch.shape, launch.name)
			must(t, err)
			must(t, op.Wait(context.Background()))
		}

		live := env.lxdInstances(t)
		if live[f1].Status != "Running" || live[f1].Config["user.lxd-deployd.shape"] != "front" || live[b1].Status != "Running" {
			t.Fatalf("LXD instances: %v", live)
		}
	})

	phase(t, "a dry run changes nothing", func(t *testing.T) {
		plan, err := applyTemplate(t, admin, "dep1", next, client.ApplyOptions{DryRun: true})
		must(t, err)
		if len(plan.Create) != 1 || plan.Create[0].Name != "extra" || len(plan.Update) != 1 || plan.Update[0].Name != "front" ||
			len(plan.Delete) != 1 || plan.Delete[0] != (api.DeploymentShapeDeletion{Name: "back", Instances: 1}) || !reflect.DeepEqual(plan.Unmanaged, []string{"web"}) {
			t.Fatalf("plan: %+v", plan)
		}

		if changes := plan.Update[0].Changes; len(changes) != 1 || changes[0].Field != "scaling_maximum" {
			t.Fatalf("front changes: %+v", changes)
		}

		want = map[string]string{"web": "3/0", "front": "3/1", "back": "2/1"}
		if got := shapeSummary(t, admin, "dep1"); !reflect.DeepEqual(got, want) {
			t.Fatalf("a dry run changed the shapes: %v", got)
		}
	})

	phase(t, "refused applies change nothing", func(t *testing.T) {
		// A bad config is a 400 that changes nothing.
		d, etag, err := admin.GetDeployment("dep1")
		must(t, err)
		put := d.Writable()
		put.Description = "must not stick"
		put.Template = "resources:\n- name: app\n  type: tiers.jinja\n  properties: {tiers: [{name: Bad_Name, max: 1}]}\n"
		put.TemplateImports = tiersImports
		_, err = admin.ApplyDeploymentTemplate("dep1", put, etag, client.ApplyOptions{})
		expectCode(t, err, 400, "bad shape name")
		if !strings.Contains(err.Error(), "Bad_Name") {
			t.Fatalf("the 400 must carry the engine's message: %v", err)
		}

		put.Template = "resources: [{name: x, type: missing.jinja}]"
		_, err = admin.ApplyDeploymentTemplate("dep1", put, etag, client.ApplyOptions{})
		expectCode(t, err, 400, "missing template")

		// back still has an instance: applying is a 409 and changes nothing.
		_, err = applyTemplate(t, admin, "dep1", next, client.ApplyOptions{})
		expectCode(t, err, 409, "dropping a shape with instances")
		if got := shapeSummary(t, admin, "dep1"); !reflect.DeepEqual(got, want) {
			t.Fatalf("refused applies changed the shapes: %v", got)
		}

		if names := manifestNames(t, admin, "dep1"); len(names) != 1 {
			t.Fatalf("refused applies recorded manifests: %v", names)
		}

		if d, _, _ := admin.GetDeployment("dep1"); d.Description == "must not stick" {
			t.Fatal("a refused apply changed the deployment's description")
		}
	})

	phase(t, "a forced apply", func(t *testing.T) {
		// With force, back's instance goes first; front keeps its instance (sizes are the
		// governor's), extra comes, web stays.
		_, err := applyTemplate(t, admin, "dep1", next, client.ApplyOptions{Force: true})
		must(t, err)
		want = map[string]string{"web": "3/0", "front": "5/1", "extra": "1/0"}
		if got := shapeSummary(t, admin, "dep1"); !reflect.DeepEqual(got, want) {
			t.Fatalf("shapes after the second apply: %v, want %v", got, want)
		}

		live := env.lxdInstances(t)
		if _, ok := live[b1]; ok || live[f1].Status != "Running" {
			t.Fatalf("LXD after the forced apply: %v", live)
		}
	})

	phase(t, "manifests and types", func(t *testing.T) {
		// Manifests.
		manifests, err := admin.GetDeploymentManifests("dep1")
		must(t, err)
		if len(manifests) != 2 || manifests[0].Name != "manifest-1" || manifests[1].Cause != "update" || manifests[1].InputConfig != next || manifests[1].Imports["tiers.jinja"] != tiersJinja {
			t.Fatalf("manifests: %+v", manifests)
		}

		if layout := manifests[1].Layout.Resources; len(layout) != 1 || layout[0].Type != "tiers.jinja" || len(layout[0].Resources) != 2 {
			t.Fatalf("layout: %+v", manifests[1].Layout)
		}

		// Types.
		instances, err := admin.GetTemplateTypeInstances("shape")
		must(t, err)
		var paths []string
		for _, i := range instances {
			if i.Deployment == "dep1" {
				paths = append(paths, i.Name+"@"+i.Manifest+":"+i.Path)
			}
		}

		if want := []string{"front@manifest-2:$.resources[0].resources[0]", "extra@manifest-2:$.resources[0].resources[1]"}; !reflect.DeepEqual(paths, want) {
			t.Fatalf("shape instances: %v, want %v", paths, want)
		}

		types, err := admin.GetTemplateTypeNames()
		must(t, err)
		if !reflect.DeepEqual(types, []string{"shape", "tiers.jinja"}) {
			t.Fatalf("types: %v", types)
		}
	})

	phase(t, "a rollback to the first version", func(t *testing.T) {
		// Rollback to the first version: back returns (empty), extra goes, front shrinks its
		// bounds but keeps its instance.
		_, plan, err := admin.RollbackDeployment("dep1", "manifest-1", client.ApplyOptions{DryRun: true})
		must(t, err)
		if len(plan.Create) != 1 || plan.Create[0].Name != "back" || len(plan.Delete) != 1 || plan.Delete[0].Name != "extra" {
			t.Fatalf("rollback plan: %+v", plan)
		}

		applied, _, err := admin.RollbackDeployment("dep1", "manifest-1", client.ApplyOptions{})
		must(t, err)
		if applied.Name != "manifest-3" || applied.Cause != "rollback of manifest-1" {
			t.Fatalf("rollback manifest: %+v", applied)
		}

		want = map[string]string{"web": "3/0", "front": "3/1", "back": "2/0"}
		if got := shapeSummary(t, admin, "dep1"); !reflect.DeepEqual(got, want) {
			t.Fatalf("shapes after the rollback: %v, want %v", got, want)
		}

		_, _, err = admin.RollbackDeployment("dep1", "manifest-9", client.ApplyOptions{})
		expectCode(t, err, 404, "rollback to a missing manifest")
	})

	phase(t, "a deployment created from a template", func(t *testing.T) {
		// A deployment created from a template, in one request.
		req := api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "shop"}}
		req.Template = tiersConfig("web:2")
		req.TemplateImports = tiersImports
		plan, err := admin.PlanDeploymentCreate(req)
		must(t, err)
		if len(plan.Create) != 1 || plan.Create[0].Description != "web tier of shop" {
			t.Fatalf("create plan: %+v", plan)
		}

		_, _, err = admin.GetDeployment("shop")
		expectCode(t, err, 404, "a dry-run create")
		must(t, admin.CreateDeployment(req))
		if got := shapeSummary(t, admin, "shop"); !reflect.DeepEqual(got, map[string]string{"web": "2/0"}) {
			t.Fatalf("shop: %v", got)
		}

		if names := manifestNames(t, admin, "shop"); !reflect.DeepEqual(names, []string{"manifest-1"}) {
			t.Fatalf("shop manifests: %v", names)
		}
	})

	phase(t, "governors cannot read manifests", func(t *testing.T) {
		// Governors (deployment keys) cannot read manifests: admin only.
		_, err := env.gov.GetDeploymentManifestNames("dep1")
		expectCode(t, err, 403, "a governor reading manifests")
		_, err = env.gov.GetTemplateTypeNames()
		expectCode(t, err, 403, "a governor reading types")
	})
}

// writeFiles writes files under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func TestTemplatesCLI(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	u := newCLIUser(t, d)
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"tiers.jinja": tiersJinja,
		"v1.yaml":     tiersConfig("web:2", "db:1"),
		"v2.yaml":     tiersConfig("web:4"),
		"bad.yaml":    "resources: [{name: x, type: missing.jinja}]\n",
	})

	// expand runs locally: no daemon needed, templates found next to the config.
	out := u.ok("expand", filepath.Join(dir, "v1.yaml"), "--deployment", "shop")
	if !contains(out, "config:", "layout:", "name: web", "type: tiers.jinja", "web tier of shop") {
		t.Fatalf("expand:\n%s", out)
	}

	r := u.run("", "expand", filepath.Join(dir, "bad.yaml"))
	if r.code == 0 || !strings.Contains(r.stderr, "missing.jinja") {
		t.Fatalf("expand of a bad config: %+v", r)
	}

	// The corpus: the expanded config and layout are the expected ones.
	corpus := filepath.Join("testdata", "templates", "nested-templates")
	out = u.ok("expand", filepath.Join(corpus, "config.yaml"), "--deployment", "demo", "--format", "json")
	if !contains(out, `"shop-api-node1"`, `"tier shop-web of demo"`, `"type": "node.star"`) {
		t.Fatalf("expand of the corpus case:\n%s", out)
	}

	r = u.run("", "expand", filepath.Join("testdata", "templates", "schema-wrong-type", "config.yaml"))
	if r.code == 0 || !strings.Contains(r.stderr, "'80' is not of type 'integer'") {
		t.Fatalf("expand of a corpus error case: %+v", r)
	}

	// create, apply --diff, apply, manifests, rollback.
	u.ok("deployment", "create", "shop", "--config", filepath.Join(dir, "v1.yaml"))
	out = u.ok("deployment", "apply", "shop", "--config", filepath.Join(dir, "v2.yaml"), "--diff")
	if !contains(out, "~ update shape web", "scaling_maximum: 2 -> 4", "- delete shape db") {
		t.Fatalf("apply --diff:\n%s", out)
	}

	out = u.ok("deployment", "shape", "list", "shop", "--format", "csv")
	if !contains(out, "db", "web") {
		t.Fatalf("apply --diff changed the shapes:\n%s", out)
	}

	out = u.ok("deployment", "apply", "shop", "--config", filepath.Join(dir, "v2.yaml"))
	if !contains(out, "Deployment shop applied as manifest-2") {
		t.Fatalf("apply: %s", out)
	}

	r = u.run("", "deployment", "apply", "shop", "--config", filepath.Join(dir, "bad.yaml"))
	if r.code == 0 || !strings.Contains(r.stderr, "missing.jinja") {
		t.Fatalf("apply of a bad config: %+v", r)
	}

	out = u.ok("deployment", "manifest", "list", "shop", "--format", "csv")
	if !contains(out, "manifest-1,create", "manifest-2,update") {
		t.Fatalf("manifest list:\n%s", out)
	}

	out = u.ok("deployment", "manifest", "show", "shop")
	if !contains(out, "name: manifest-2", "input_config:", "tiers.jinja", "expanded_config:") {
		t.Fatalf("manifest show:\n%s", out)
	}

	out = u.ok("deployment", "rollback", "shop", "manifest-1")
	if !contains(out, "rolled back to manifest-1 (manifest-3)") {
		t.Fatalf("rollback: %s", out)
	}

	out = u.ok("deployment", "shape", "list", "shop", "--format", "csv")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	sort.Strings(lines)
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "db,") || !strings.HasPrefix(lines[1], "web,") {
		t.Fatalf("shapes after the rollback:\n%s", out)
	}

	// A registry directory, its index, and deploy from it.
	registryDir := t.TempDir()
	writeFiles(t, registryDir, map[string]string{
		"tiers/v1.0.0/tiers.jinja": tiersJinja,
		"tiers/v1.0.1/tiers.jinja": strings.Replace(tiersJinja, "tier of", "tier (v1.0.1) of", 1),
		"tiers/v2.0.0/tiers.jinja": tiersJinja,
	})

	out = u.ok("registry", "index", registryDir)
	if !contains(out, "1 templates, 3 versions") {
		t.Fatalf("registry index: %s", out)
	}

	if _, err := os.Stat(filepath.Join(registryDir, "index.json")); err != nil {
		t.Fatal(err)
	}

	out = u.ok("deploy", "tiers:v1.0", "--registry", registryDir, "--name", "fromreg", "--properties", "tiers=[{name: api, max: 3}]")
	if !contains(out, "Deployment fromreg created from tiers:v1.0 as manifest-1: shapes api") {
		t.Fatalf("deploy: %s", out)
	}

	out = u.ok("deployment", "shape", "show", "fromreg", "api")
	if !contains(out, "api tier (v1.0.1) of fromreg", "scaling_maximum: 3") {
		t.Fatalf("deployed shape:\n%s", out)
	}

	out = u.ok("deployment", "manifest", "show", "fromreg")
	if !contains(out, "tiers:v1.0/tiers.jinja") {
		t.Fatalf("the fetched template must travel in the imports:\n%s", out)
	}

	r = u.run("", "deploy", "tiers:v3", "--registry", registryDir, "--name", "nope")
	if r.code == 0 {
		t.Fatalf("deploy of a missing version: %+v", r)
	}
}
