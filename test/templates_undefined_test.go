package test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// optionalJinja reads optional properties as Deployment Manager's templates did, with
// Jinja2's default Undefined: a fallback, a test, a loop over a list that may be missing,
// and a description that is never given (rendered as nothing, with a warning).
const optionalJinja = `{% set CPU = properties['cpu'] or '100m' %}
resources:
- name: {{ env['name'] }}
  type: shape
  properties:
    description: "{{ properties.description }}"
    config:
{% if properties.debug %}
      user.debug: "true"
{% endif %}
{% for port in properties.ports %}
      user.port-{{ port }}: open
{% endfor %}
    instance_template:
      source: {type: image, alias: busybox}
      config: {user.cpu: "{{ CPU }}"}
    scaling_maximum: 2
`

// putTemplate PUTs a templated config on a deployment, keeping its other fields.
func putTemplate(t *testing.T, c *client.Server, deployment string, config string, imports map[string]string, opts client.ApplyOptions) (*api.DeploymentTemplatePlan, error) {
	t.Helper()
	d, etag, err := c.GetDeployment(deployment)
	must(t, err)
	put := d.Writable()
	put.Template = config
	put.TemplateImports = imports
	return c.ApplyDeploymentTemplate(deployment, put, etag, opts)
}

// Deployment Manager's Jinja idioms through the daemon's templated apply, down to what LXD
// holds: an optional property's fallback reaches the instance's config in LXD; an undefined value
// rendered is a warning naming the template and line; a config that says
// strict_undefined: true fails where the value is looked up, changing nothing; a template
// that outputs "resources:" with nothing under it makes nothing.
func TestTemplatesJinjaUndefinedOnPrivateLXD(t *testing.T) {
	t.Parallel()
	env := newGovernorEnv(t, 0, 3)
	admin := env.admin
	imports := map[string]string{"optional.jinja": optionalJinja}
	config := "resources:\n- name: api\n  type: optional.jinja\n  properties: {ports: [8080]}\n"

	plan, err := putTemplate(t, admin, "dep1", config, imports, client.ApplyOptions{DryRun: true})
	must(t, err)
	if len(plan.Warnings) != 1 || plan.Warnings[0].File != "optional.jinja" || plan.Warnings[0].Line != 6 || !strings.HasPrefix(plan.Warnings[0].Message, "properties.description is undefined") {
		t.Fatalf("dry run warnings: %+v", plan.Warnings)
	}

	_, err = putTemplate(t, admin, "dep1", config, imports, client.ApplyOptions{})
	must(t, err)
	shape, _, err := admin.GetDeploymentShape("dep1", "api")
	must(t, err)
	if shape.Description != "" || !reflect.DeepEqual(shape.Config, map[string]string{"user.port-8080": "open"}) || shape.InstanceTemplate.Config["user.cpu"] != "100m" {
		t.Fatalf("api shape: %+v", shape)
	}

	// The fallback is what LXD gives the instance.
	name := env.name("api1")
	op, err := env.gov.CreateDeploymentShapeInstance("dep1", "api", name)
	must(t, err)
	must(t, op.Wait(context.Background()))
	live := env.lxdInstances(t)
	if live[name].Status != "Running" || live[name].Config["user.cpu"] != "100m" {
		t.Fatalf("LXD instance %s: %+v", name, live[name])
	}

	// The config asks for StrictUndefined: the same template fails at the first missing
	// property, and nothing changes.
	before := manifestNames(t, admin, "dep1")
	_, err = putTemplate(t, admin, "dep1", "strict_undefined: true\n"+config, imports, client.ApplyOptions{})
	var templateErr *client.TemplateError
	if !errors.As(err, &templateErr) || !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) || !strings.Contains(err.Error(), `properties['cpu']`) {
		t.Fatalf("strict apply: %v", err)
	}

	if after := manifestNames(t, admin, "dep1"); !reflect.DeepEqual(after, before) {
		t.Fatalf("a failed strict apply recorded a manifest: %v, was %v", after, before)
	}

	// An attribute of an undefined value is an error naming the template and line.
	_, err = putTemplate(t, admin, "dep1", config, map[string]string{"optional.jinja": strings.Replace(optionalJinja, "properties.description", "properties.tls.description", 1)}, client.ApplyOptions{})
	if err == nil || !strings.Contains(err.Error(), `optional.jinja:6: 'dict object' has no attribute 'tls'`) {
		t.Fatalf("undefined attribute: %v", err)
	}

	// "resources:" with nothing under it: the template makes nothing, so api goes (its
	// instance with it) and web, made by hand, stays.
	_, err = putTemplate(t, admin, "dep1", "resources:\n- name: api\n  type: none.jinja\n", map[string]string{"none.jinja": "resources:\n"}, client.ApplyOptions{Force: true})
	must(t, err)
	if got := shapeSummary(t, admin, "dep1"); !reflect.DeepEqual(got, map[string]string{"web": "3/0"}) {
		t.Fatalf("shapes after an empty resources: %v", got)
	}

	if _, present := env.lxdInstances(t)[name]; present {
		t.Fatalf("LXD still has %s after the forced apply", name)
	}
}

// The CLI: lxd-deploy expand prints the warning and succeeds; --strict-undefined fails at
// the lookup, locally and (sending strict_undefined: true) in the daemon.
func TestTemplatesJinjaUndefinedCLI(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	u := newCLIUser(t, d)
	c := d.Unix(t)
	config := filepath.Join("testdata", "templates", "dm-jinja-optional-properties", "config.yaml")

	r := u.run("", "expand", config, "--deployment", "demo")
	if r.code != 0 || !strings.Contains(r.stdout, "user.cpu: 100m") || !strings.Contains(r.stderr, "Warning: web.jinja:7: properties.description is undefined") {
		t.Fatalf("expand: %+v", r)
	}

	u.fails([]string{`item ''cpu'' not found`}, "expand", config, "--strict-undefined")
	u.ok("deployment", "create", "strict")
	u.fails([]string{`item ''cpu'' not found`}, "deployment", "apply", "strict", "--config", config, "--strict-undefined")
	if names := manifestNames(t, c, "strict"); len(names) != 0 {
		t.Fatalf("a strict apply that does not expand recorded manifests: %v", names)
	}

	// Without it the daemon expands as expand did, and says the warning too.
	r = u.run("", "deployment", "create", "lenient", "--config", config)
	if r.code != 0 || !strings.Contains(r.stderr, "web.jinja:7: properties.description is undefined") {
		t.Fatalf("create: %+v", r)
	}

	if got := shapeSummary(t, c, "lenient"); !reflect.DeepEqual(got, map[string]string{"web": "3/0", "worker": "3/0"}) {
		t.Fatalf("shapes: %v", got)
	}

	worker, _, err := c.GetDeploymentShape("lenient", "worker")
	must(t, err)
	if worker.Config["user.cpu"] != "2" || worker.Config["user.debug"] != "true" {
		t.Fatalf("worker: %+v", worker)
	}
}
