package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	yaml3 "go.yaml.in/yaml/v3"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

const corpus = "../test/testdata/templates"

// runCLI runs lxd-deploy in process and returns its stdout and error.
func runCLI(args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	root := a.command()
	root.SetArgs(args)
	err := root.Execute()
	return stdout.String(), err
}

// readDocument decodes YAML or JSON into plain data, for comparisons.
func readDocument(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var doc map[string]any
	err := yaml3.Unmarshal(data, &doc)
	if err != nil {
		t.Fatalf("%v:\n%s", err, data)
	}

	return doc
}

func TestExpandCorpusCase(t *testing.T) {
	dir := filepath.Join(corpus, "nested-templates")
	expected, err := os.ReadFile(filepath.Join(dir, "expected.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	want := readDocument(t, expected)
	for _, format := range []string{"yaml", "json"} {
		out, err := runCLI("expand", filepath.Join(dir, "config.yaml"), "--deployment", "demo", "--format", format)
		if err != nil {
			t.Fatal(err)
		}

		got := readDocument(t, []byte(out))
		if len(got) != 2 || !reflect.DeepEqual(got["config"], want["config"]) || !reflect.DeepEqual(got["layout"], want["layout"]) {
			t.Errorf("expand --format %s:\n%s\nwant the config and layout of:\n%s", format, out, expected)
		}
	}

	// The deployment name defaults to the config file's name.
	out, err := runCLI("expand", filepath.Join(dir, "config.yaml"))
	if err != nil || !strings.Contains(out, "tier shop-web of config") {
		t.Errorf("default deployment name: %v\n%s", err, out)
	}
}

func TestExpandErrors(t *testing.T) {
	for _, name := range []string{"schema-wrong-type", "template-cycle", "ref-unknown-name"} {
		expected, err := os.ReadFile(filepath.Join(corpus, name, "expected-error.txt"))
		if err != nil {
			t.Fatal(err)
		}

		_, err = runCLI("expand", filepath.Join(corpus, name, "config.yaml"), "--deployment", "demo")
		if err == nil || err.Error() != strings.TrimSpace(string(expected)) {
			t.Errorf("%s: got %v, want %s", name, err, expected)
		}
	}

	_, err := runCLI("expand", filepath.Join(corpus, "nested-templates", "config.yaml"), "--format", "table")
	if err == nil {
		t.Error("expand must refuse a table format")
	}

	_, err = runCLI("expand", filepath.Join(t.TempDir(), "missing.yaml"))
	if err == nil {
		t.Error("expand of a missing file must fail")
	}
}

func TestExpandProperties(t *testing.T) {
	dir := filepath.Join(corpus, "deployment-properties")
	out, err := runCLI("expand", filepath.Join(dir, "config.yaml"), "--properties", "image=busybox,sizes.web=7", "-f", "json")
	if err != nil {
		t.Fatal(err)
	}

	var doc struct {
		Config struct {
			Resources []struct {
				Properties map[string]any `json:"properties"`
			} `json:"resources"`
		} `json:"config"`
	}

	err = json.Unmarshal([]byte(out), &doc)
	if err != nil {
		t.Fatal(err)
	}

	props := doc.Config.Resources[0].Properties
	if props["description"] != "web on busybox" || props["scaling_maximum"] != float64(7) {
		t.Errorf("properties not applied: %v", props)
	}
}

func TestWithProperties(t *testing.T) {
	config := []byte("# the app\nproperties:\n  image: debian/12 # default\n  sizes: {web: 2, db: 1}\nresources: []\n")
	got, err := withProperties(config, []string{"sizes.web=4", "flags=[a, b]", "debug=true", "empty="})
	if err != nil {
		t.Fatal(err)
	}

	if !strings.Contains(string(got), "# the app") {
		t.Errorf("comments lost:\n%s", got)
	}

	doc := readDocument(t, got)
	want := map[string]any{"image": "debian/12", "sizes": map[string]any{"web": 4, "db": 1}, "flags": []any{"a", "b"}, "debug": true, "empty": ""}
	if !reflect.DeepEqual(doc["properties"], want) {
		t.Errorf("properties = %#v\nwant %#v", doc["properties"], want)
	}

	// A config without properties gets them.
	got, err = withProperties([]byte("resources: []\n"), []string{"image=busybox"})
	if err != nil || !reflect.DeepEqual(readDocument(t, got)["properties"], map[string]any{"image": "busybox"}) {
		t.Errorf("added properties: %v\n%s", err, got)
	}

	_, err = withProperties(config, []string{"novalue"})
	if err == nil {
		t.Error("a property without '=' must be refused")
	}

	_, err = withProperties([]byte("- a list"), []string{"a=b"})
	if err == nil {
		t.Error("a config that is not a mapping must be refused")
	}
}

func TestTemplateFetcher(t *testing.T) {
	f := templateFlags{registries: []string{"./templates", "github.com/acme/base=https://templates.acme.example/", "https://r.example/?token=x"}}
	fetcher, err := f.fetcher("github.com/acme/web/app:v1")
	if err != nil {
		t.Fatal(err)
	}

	want := map[string]string{cliRegistry: "https://r.example/?token=x", "github.com/acme/web": "https://r.example/?token=x", "github.com/acme/base": "https://templates.acme.example/"}
	if !reflect.DeepEqual(fetcher.Registries, want) || fetcher.Default != cliRegistry || fetcher.GitHub != registry.DefaultGitHub || !fetcher.URLs {
		t.Errorf("fetcher = %+v", fetcher)
	}

	f = templateFlags{registries: []string{"github.com/acme/base="}}
	_, err = f.fetcher("")
	if err == nil {
		t.Error("a registry without a location must be refused")
	}
}

func TestWritePlan(t *testing.T) {
	var out bytes.Buffer
	err := writePlan(&out, &api.DeploymentTemplatePlan{
		Create:    []api.DeploymentShapesPost{{DeploymentShapePost: api.DeploymentShapePost{Name: "api"}}},
		Update:    []api.DeploymentShapeChange{{Name: "web", Changes: []api.DeploymentFieldChange{{Field: "scaling_maximum", Old: 3, New: 5}, {Field: "config.user.a", Old: nil, New: "x"}}}},
		Delete:    []api.DeploymentShapeDeletion{{Name: "db", Instances: 2}},
		Unchanged: []string{"cache"},
		Unmanaged: []string{"debug"},
	})
	if err != nil {
		t.Fatal(err)
	}

	want := `+ create shape api
~ update shape web
    scaling_maximum: 3 -> 5
    config.user.a: (unset) -> "x"
- delete shape db (and its 2 instances: needs --force)
Unchanged: cache
Not made by a template (left alone): debug
`
	if out.String() != want {
		t.Errorf("plan:\n%s\nwant:\n%s", out.String(), want)
	}

	out.Reset()
	_ = writePlan(&out, &api.DeploymentTemplatePlan{Unchanged: []string{"web"}})
	if !strings.HasPrefix(out.String(), "No shape changes\n") {
		t.Errorf("empty plan: %q", out.String())
	}
}

func TestDeployConfig(t *testing.T) {
	config, err := deployConfig("shop", "web:v1", map[string]any{"image": "busybox"})
	if err != nil {
		t.Fatal(err)
	}

	doc := readDocument(t, config)
	want := map[string]any{"resources": []any{map[string]any{"name": "shop", "type": "web:v1", "properties": map[string]any{"image": "busybox"}}}}
	if !reflect.DeepEqual(doc, want) {
		t.Errorf("deploy config:\n%s", config)
	}
}

func TestSplitProperties(t *testing.T) {
	got := splitProperties([]string{"a=1,tiers=[{name: web, max: 3}, {name: db, max: 1}],b.c=x", "d=e,f"})
	want := []string{"a=1", "tiers=[{name: web, max: 3}, {name: db, max: 1}]", "b.c=x", "d=e,f"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("split = %q, want %q", got, want)
	}

	props, err := parseProperties([]string{"a=1,tiers=[{name: web, max: 3}]"})
	if err != nil || props["a"] != 1 || len(props["tiers"].([]any)) != 1 {
		t.Errorf("props = %v, %v", props, err)
	}
}

// An undefined property renders as nothing by default (Jinja2's Undefined, with a warning)
// and is the strict case's error with --strict-undefined.
func TestExpandStrictUndefined(t *testing.T) {
	config := filepath.Join(corpus, "jinja-undefined-property", "config.yaml")
	var stdout, stderr bytes.Buffer
	a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr}
	root := a.command()
	root.SetArgs([]string{"expand", config, "--deployment", "demo"})
	err := root.Execute()
	if err != nil || !strings.Contains(stdout.String(), "description: port") || !strings.Contains(stderr.String(), "Warning: web.jinja:5: properties.port is undefined") {
		t.Fatalf("expand: %v\n%s\n%s", err, stdout.String(), stderr.String())
	}

	expected, err := os.ReadFile(filepath.Join(corpus, "jinja-undefined-property", "expected-error.txt"))
	if err != nil {
		t.Fatal(err)
	}

	_, err = runCLI("expand", config, "--deployment", "demo", "--strict-undefined")
	if err == nil || err.Error() != strings.TrimSpace(string(expected)) {
		t.Fatalf("expand --strict-undefined: got %v, want %s", err, expected)
	}

	// The config says it: what apply sends makes the daemon expand it the same way.
	out, err := withStrictUndefined([]byte("# web\nresources: []\n"))
	if err != nil || string(out) != "# web\nresources: []\nstrict_undefined: true\n" {
		t.Fatalf("withStrictUndefined: %v\n%s", err, out)
	}
}
