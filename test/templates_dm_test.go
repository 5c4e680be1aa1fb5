package test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/client"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// dmCase is a case of the template corpus, as a user has it on disk.
func dmCase(name string) string {
	return filepath.Join("testdata", "templates", name, "config.yaml")
}

// readCase reads the files of a corpus case as the API carries them.
func readCase(t *testing.T, name string) (string, map[string]string) {
	t.Helper()
	dir := filepath.Join("testdata", "templates", name)
	imports := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}

		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}

		data, err := os.ReadFile(p)
		imports[filepath.ToSlash(rel)] = string(data)
		return err
	})
	must(t, err)
	config := imports["config.yaml"]
	for _, f := range []string{"config.yaml", "expected.yaml", "expected-error.txt", "expand.txt", "README.md"} {
		delete(imports, f)
	}

	return config, imports
}

// Configs and templates as Deployment Manager users wrote them, through the CLI and the
// daemon: Python 2 idioms and string imports deploy; every schema problem is reported, by
// the CLI one per line and by the daemon in the error's metadata; DM type aliases are
// warnings; an index-less registry serves short references against the CLI's default
// registry.
func TestTemplatesDMCompat(t *testing.T) {
	t.Parallel()
	d := startDaemon(t, daemonOptions{})
	u := newCLIUser(t, d)
	c := d.Unix(t)

	// A Python 2 era template (iteritems, has_key, xrange, basestring, del d[k]...).
	u.ok("deployment", "create", "py2", "--config", dmCase("dm-python2"))
	shapes := shapeSummary(t, c, "py2")
	if len(shapes) != 2 || shapes["app-web"] != "3/0" || shapes["app-worker"] != "2/0" {
		t.Fatalf("shapes of the Python 2 template: %v", shapes)
	}

	web, _, err := c.GetDeploymentShape("py2", "app-web")
	must(t, err)
	if web.Config["user.team"] != "shop" || web.Config["user.internal"] != "" {
		t.Fatalf("app-web config (del of a key): %v", web.Config)
	}

	// Plain string imports, in the config and in a schema.
	u.ok("deployment", "create", "strings", "--config", dmCase("dm-string-imports"))
	if got := shapeSummary(t, c, "strings"); got["web"] == "" {
		t.Fatalf("shapes of the string imports case: %v", got)
	}

	// Every schema problem, one per line, and nothing created.
	r := u.run("", "deployment", "create", "bad", "--config", dmCase("dm-schema-errors"))
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if r.code != 1 || len(lines) != 6 || !strings.Contains(lines[0], "properties do not match web.py.schema (5 problems)") ||
		!strings.HasPrefix(lines[2], `  property "image": is required by web.py.schema`) || !strings.HasPrefix(lines[5], `  property "tls.cert": 3 is not of type 'string'`) {
		t.Fatalf("create with schema errors: exit %d\n%s", r.code, r.stderr)
	}

	_, _, err = c.GetDeployment("bad")
	expectCode(t, err, 404, "a deployment whose config does not expand")

	// The daemon says the same in the error's metadata, which the client reads.
	config, imports := readCase(t, "dm-schema-errors")
	err = c.CreateDeployment(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "bad"}, DeploymentPut: api.DeploymentPut{Template: config, TemplateImports: imports}})
	var templateErr *client.TemplateError
	if !errors.As(err, &templateErr) || !lxdapi.StatusErrorCheck(err, http.StatusBadRequest) || len(templateErr.Details.Problems) != 5 ||
		templateErr.Details.Problems[1].Property != "image" || templateErr.Details.Problems[1].Rule != "required" || templateErr.Details.Problems[1].Schema != "web.py.schema" {
		t.Fatalf("daemon error: %#v", err)
	}

	if !strings.Contains(templateErr.Detail(), "\n  property \"port\": '80' is not of type 'integer'") {
		t.Errorf("client error detail:\n%s", templateErr.Detail())
	}

	// A template that returns no resources.
	u.fails([]string{"template no_resources.py returned no resources: a template must output a YAML document with a resources list"}, "deployment", "create", "empty", "--config", dmCase("dm-no-resources"))

	// Python statements Starlark lacks say what to write instead.
	u.fails([]string{"web.py:4: function flatten calls itself", "rewrite it with a loop"}, "expand", dmCase("dm-recursion"))
	u.fails([]string{"web.py:1: classes are not available in Starlark"}, "expand", dmCase("dm-class"))

	// DM's type aliases: warnings on stderr, in the dry-run plan and in the answer.
	r = u.run("", "deployment", "create", "aliases", "--config", dmCase("dm-schema-type-aliases"))
	if r.code != 0 || !contains(r.stderr, `Warning: web.jinja.schema:5: type "int" is not a JSON Schema type: read as "integer"`, "Warning: web.jinja.schema:8:") {
		t.Fatalf("create with type aliases: exit %d\n%s", r.code, r.stderr)
	}

	config, imports = readCase(t, "dm-schema-type-aliases")
	plan, err := c.PlanDeploymentCreate(api.DeploymentsPost{DeploymentPost: api.DeploymentPost{Name: "aliases2"}, DeploymentPut: api.DeploymentPut{Template: config, TemplateImports: imports}})
	must(t, err)
	if len(plan.Warnings) != 4 || plan.Warnings[0].File != "web.jinja.schema" || plan.Warnings[0].Line != 5 {
		t.Fatalf("dry-run warnings: %+v", plan.Warnings)
	}

	// A DM-style registry: no index.json, served by a loopback server that lists
	// directories; short references resolve against the CLI's default registry.
	regDir := t.TempDir()
	redis := "resources:\n- name: {{ env['name'] }}\n  type: shape\n  properties:\n    description: redis {{ properties['version'] }}\n    instance_template: {source: {type: image, alias: busybox}}\n    scaling_maximum: 1\n"
	writeFiles(t, regDir, map[string]string{
		"redis/v1/redis.jinja":            strings.Replace(redis, "{{ properties['version'] }}", "v1", 1),
		"redis/v1.0.1/redis.jinja":        redis,
		"redis/v1.0.1/redis.jinja.schema": "imports: [helpers/x.jinja]\nproperties:\n  version: {type: string, default: v1.0.1}\n",
		"redis/v1.0.1/helpers/x.jinja":    "{# helper #}\n",
	})

	listing := httptest.NewServer(http.FileServer(http.Dir(regDir)))
	defer listing.Close()

	u.ok("registry", "add", "github.com/acme/dm", listing.URL)
	u.ok("registry", "default", "github.com/acme/dm")
	if out := u.ok("registry", "default"); strings.TrimSpace(out) != "github.com/acme/dm" {
		t.Fatalf("registry default: %q", out)
	}

	out := u.ok("deploy", "redis:v1", "--name", "cache")
	if !contains(out, "Deployment cache created from redis:v1") {
		t.Fatalf("deploy redis:v1: %s", out)
	}

	cache, _, err := c.GetDeploymentShape("cache", "cache")
	must(t, err)
	if cache.Description != "redis v1.0.1" {
		t.Fatalf("redis:v1 must resolve to the highest patch, v1.0.1: %q", cache.Description)
	}

	// The same registry where directories cannot be listed (raw Git hosting): a version
	// directory named as asked still works; another needs the index.
	noList := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/") {
			http.NotFound(w, r)
			return
		}

		http.FileServer(http.Dir(regDir)).ServeHTTP(w, r)
	}))
	defer noList.Close()

	u.ok("registry", "add", "github.com/acme/dm", noList.URL)
	out = u.ok("deploy", "redis:v1", "--name", "cache2")
	cache, _, err = c.GetDeploymentShape("cache2", "cache2")
	must(t, err)
	if !contains(out, "Deployment cache2 created") || cache.Description != "redis v1" {
		t.Fatalf("deploy redis:v1 without listing: %s %q", out, cache.Description)
	}

	u.fails([]string{"cannot list its directories", "lxd-deploy registry index DIR"}, "deploy", "redis:v1.0", "--name", "cache3")
	u.ok("registry", "default", "--unset")
	u.fails([]string{"no default registry is configured"}, "deploy", "redis:v1", "--name", "cache4")
}
