package templates_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/isolate"
)

// Fuzz targets of the expansion engine, run in process: the engine's own limits are the
// first line, and limitFuzzMemory caps this process's address space so that an input that
// gets past them (a builtin allocating gigabytes) kills the fuzz worker, not the machine.
// `make fuzz` runs each for 60 s; `go test` runs the seeds in testdata/fuzz.

var limitOnce sync.Once

func limitFuzzMemory(f *testing.F) {
	limitOnce.Do(func() {
		err := isolate.LimitThisProcess(2 << 30)
		if err != nil {
			f.Logf("address-space limit not set: %v", err)
		}
	})
}

var fuzzLimits = templates.Limits{Steps: 100_000, Timeout: 2 * time.Second, OutputBytes: 1 << 20, Depth: 8, Resources: 1000}

// checkExpand runs one expansion and checks what must always hold: no panic (the fuzzer
// sees one), errors are ExpandErrors, and a success names every resource in its order.
func checkExpand(t *testing.T, config []byte, imports map[string][]byte) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	exp, err := templates.Expand(ctx, config, imports, templates.Options{Env: templates.Env{Deployment: "fuzz", Project: "default"}, Limits: fuzzLimits})
	if err != nil {
		var ee *templates.ExpandError
		if !errors.As(err, &ee) {
			t.Fatalf("not an ExpandError: %T %v", err, err)
		}

		return
	}

	if len(exp.Order) != len(exp.Config.Resources) {
		t.Fatalf("order has %d names for %d resources", len(exp.Order), len(exp.Config.Resources))
	}
}

func FuzzJinja(f *testing.F) {
	limitFuzzMemory(f)
	f.Add("resources:\n- {name: a, type: shape, properties: {n: {{ properties['n'] }}}}\n")
	f.Add("{% for i in range(3) %}- x{% endfor %}")
	f.Add("{% macro m(x) %}{{ m(x) }}{% endmacro %}{{ m(1) }}")
	f.Add("{{ 'x' * 100000 }}")
	f.Add("{% import 'h.jinja' as h %}{{ h.f() }}")
	f.Fuzz(func(t *testing.T, template string) {
		if len(template) > 8<<10 {
			return
		}

		checkExpand(t, []byte("resources:\n- {name: r, type: t.jinja, properties: {n: 1}}\n"), map[string][]byte{"t.jinja": []byte(template), "h.jinja": []byte("{% macro f() %}resources: []{% endmacro %}")})
	})
}

func FuzzPython(f *testing.F) {
	limitFuzzMemory(f)
	f.Add("def GenerateConfig(context):\n    return {'resources': [{'name': 'a', 'type': 'shape'}]}\n")
	f.Add("import yaml\ndef GenerateConfig(context):\n    return yaml.dump({'resources': []})\n")
	f.Add("def GenerateConfig(context):\n    l = [0] * 1000\n    for i in range(5):\n        l = l + l\n    return {}\n")
	f.Add("def GenerateConfig(context):\n    if context.properties['n'] is None:\n        return ''\n    return '%s' % context.env\n")
	f.Add("from a.b import c\ndef GenerateConfig(ctx):\n    return {}\n")
	f.Fuzz(func(t *testing.T, source string) {
		if len(source) > 8<<10 {
			return
		}

		checkExpand(t, []byte("resources:\n- {name: r, type: t.py, properties: {n: 1}}\n"), map[string][]byte{"t.py": []byte(source)})
	})
}

// FuzzConfig parses configs with properties, defaults and $(ref.) references.
func FuzzConfig(f *testing.F) {
	limitFuzzMemory(f)
	f.Add("resources:\n- {name: a, type: shape, properties: {x: $(ref.b.y)}}\n- {name: b, type: shape, properties: {y: 1}}\n")
	f.Add("properties: {p: 1}\nresources:\n- {name: a, type: shape, properties: {x: '$(properties.p)'}}\n")
	f.Add("resources:\n- {name: a, type: shape, properties: {x: $(ref.a.x)}}\n")
	f.Add("defaults: {shape: {z: 2}}\nresources:\n- {name: a, type: shape, properties: {x: 'v-$(ref.b.l[0])'}}\n- {name: b, type: shape, properties: {l: [1]}}\n")
	f.Add("imports: [{path: x}]\nresources: []\n")
	f.Add("- not a map")
	f.Fuzz(func(t *testing.T, config string) {
		if len(config) > 16<<10 {
			return
		}

		checkExpand(t, []byte(config), nil)
	})
}
