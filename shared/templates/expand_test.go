package templates

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// A registry template is fetched once, expands with its own helpers (its imports are
// scoped to it), and what was fetched can be embedded to expand again without a fetcher,
// as the CLI does before sending a config to the daemon.
func TestExpandRegistryTemplate(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"web/v1.0.1/web.py":            "import helpers.names\n\ndef GenerateConfig(context):\n    return {'resources': [{'name': helpers.names.of(context), 'type': 'shape', 'properties': {'description': context.imports['motd.txt']}}]}\n",
		"web/v1.0.1/web.py.schema":     "properties:\n  size: {type: integer, default: 2}\n",
		"web/v1.0.1/helpers/names.py":  "def of(context):\n    return '%s-%d' % (context.env['name'], context.properties['size'])\n",
		"web/v1.0.1/motd.txt":          "from the registry",
		"web/v1.1/web.py":              "def GenerateConfig(context):\n    return {'resources': []}\n",
		"web/v1/web.py":                "def GenerateConfig(context):\n    return {'resources': []}\n",
		"web/v1.0.1/unrelated.jinja":   "not used",
		"web/v1.0.1/nested/deeper.txt": "not used",
	}

	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		_ = os.MkdirAll(filepath.Dir(p), 0o755)
		err := os.WriteFile(p, []byte(content), 0o644)
		if err != nil {
			t.Fatal(err)
		}
	}

	config := []byte("resources:\n- name: front\n  type: github.com/acme/templates/web:v1\n- name: local\n  type: local.jinja\n")
	imports := map[string][]byte{
		"local.jinja": []byte("resources:\n- name: local-shape\n  type: shape\n"),
		"motd.txt":    []byte("from the config"), // Not what the registry template sees.
	}

	fetcher := &registry.Fetcher{Registries: map[string]string{"github.com/acme/templates": dir}}
	exp, err := Expand(context.Background(), config, imports, Options{Fetch: fetcher})
	if err != nil {
		t.Fatal(err)
	}

	r := exp.Config.Resources[0]
	if r.Name != "front-2" || r.Properties["description"] != "from the registry" {
		t.Errorf("registry template expanded to %+v", r)
	}

	if exp.Fetched["github.com/acme/templates/web:v1/web.py"] == nil || exp.Fetched["github.com/acme/templates/web:v1/helpers/names.py"] == nil {
		t.Errorf("fetched: %v", sortedKeys(exp.Fetched))
	}

	// Embedded: no fetcher needed.
	for k, v := range exp.Fetched {
		imports[k] = v
	}

	again, err := Expand(context.Background(), config, imports, Options{})
	if err != nil || again.Config.Resources[0].Name != "front-2" || len(again.Fetched) != 0 {
		t.Errorf("expanding with embedded files: %v, %+v", err, again)
	}

	// Without fetcher or embedding: an error that says what to do.
	_, err = Expand(context.Background(), config, map[string][]byte{"local.jinja": imports["local.jinja"]}, Options{})
	if err == nil || !strings.Contains(err.Error(), "is not among the imports and nothing may fetch it here") {
		t.Errorf("no fetcher: %v", err)
	}
}

func TestExpandCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Expand(ctx, []byte("resources:\n- name: a\n  type: shape\n"), nil, Options{})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled expansion: %v", err)
	}
}

func TestShapesCoerce(t *testing.T) {
	config := []byte(`
resources:
- name: web
  type: shape
  properties:
    description: web
    config:
      user.port: 80
      user.debug: true
    instance_template:
      source: {type: image, alias: debian/12}
      config:
        limits.cpu: 2
    scaling_minimum: 1
    scaling_maximum: 2
- name: bad
  type: shape
  properties:
    scaling_maximum: many
`)

	exp, err := Expand(context.Background(), config, nil, Options{})
	if err != nil {
		t.Fatal(err)
	}

	_, _, err = Shapes(exp)
	if err == nil || err.Error() != `resource "bad": property "scaling_maximum": got a string, want a number` {
		t.Errorf("bad shape: %v", err)
	}

	exp.Config.Resources = exp.Config.Resources[:1]
	exp.Order = exp.Order[:1]
	shapes, order, err := Shapes(exp)
	if err != nil {
		t.Fatal(err)
	}

	web := shapes["web"]
	if web.Config["user.port"] != "80" || web.Config["user.debug"] != "true" || web.InstanceTemplate.Config["limits.cpu"] != "2" || web.ScalingMaximum != 2 || len(order) != 1 {
		t.Errorf("web shape: %+v", web)
	}

	exp.Config.Resources[0].Properties["scaling_minimum"] = 3
	_, _, err = Shapes(exp)
	if err == nil || err.Error() != `resource "web": scaling_maximum (2) must be at least scaling_minimum (3)` {
		t.Errorf("shared/validate: %v", err)
	}
}

func TestPythonCompat(t *testing.T) {
	src := `"""Docstring mentioning
import yaml
and x is None, which stay as they are."""
import yaml
import helpers.common as c  # a comment
from helpers.extra import label, PREFIX as P
from __future__ import print_function

def f(x):
    s = 'is not'  # "is" in a string or a comment stays
    if x is not None and x is None:
        import json
    return (x is
            None)
`
	out, imports, err := pythonCompat(src)
	if err != nil {
		t.Fatal(err)
	}

	want := `"""Docstring mentioning
import yaml
and x is None, which stay as they are."""
pass       
pass                                    
pass                                        
pass                                 

def f(x):
    s = 'is not'  # "is" in a string or a comment stays
    if x !=     None and x == None:
        pass       
    return (x ==
            None)
`
	trim := func(s string) string {
		lines := strings.Split(s, "\n")
		for i := range lines {
			lines[i] = strings.TrimRight(lines[i], " ")
		}

		return strings.Join(lines, "\n")
	}

	if trim(out) != trim(want) {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}

	if len(out) != len(src) {
		t.Errorf("the rewrite moved characters: %d != %d", len(out), len(src))
	}

	got := []string{}
	for _, imp := range imports {
		got = append(got, strings.Join(imp.bindings(), ","))
	}

	if strings.Join(got, " ") != "yaml c label,P json" {
		t.Errorf("bindings: %v", got)
	}

	for _, bad := range []string{"from . import x\n", "import a, b\n", "from a import (b,\n c)\n", "from a import *\n"} {
		_, _, err := pythonCompat(bad)
		if err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
