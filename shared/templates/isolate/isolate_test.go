package isolate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// The test binary is its own child: every Runner here re-executes it. The hostile
// templates below therefore run only in children with an address-space limit; a failure
// of the isolation kills a child (or fails a test), never this process or the machine.
func TestMain(m *testing.M) {
	MaybeChild()
	os.Exit(m.Run())
}

var env = templates.Env{Deployment: "shop", Project: "default"}

func TestExpandSameAsInProcess(t *testing.T) {
	config := []byte(`
resources:
- {name: web, type: web.jinja, properties: {count: 2}}
- {name: db, type: db.py, properties: {size: 1.5}}
`)
	imports := map[string][]byte{
		"web.jinja": []byte(`resources:
{% for i in range(properties['count']) %}
- name: {{ env['name'] }}-{{ i }}
  type: shape
  properties: {scaling_maximum: {{ i + 1 }}, description: "$(ref.db.description)"}
{% endfor %}
`),
		"db.py": []byte("def GenerateConfig(context):\n    return {'resources': [{'name': 'db', 'type': 'shape', 'properties': {'description': 'size %s' % context.properties['size'], 'scaling_minimum': 1, 'ratio': 0.5}}]}\n"),
	}

	want, err := templates.Expand(context.Background(), config, imports, templates.Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}

	got, err := (&Runner{}).Expand(context.Background(), config, imports, templates.Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}

	if !reflect.DeepEqual(got.Config, want.Config) || !reflect.DeepEqual(got.Layout, want.Layout) || !reflect.DeepEqual(got.Order, want.Order) || !reflect.DeepEqual(got.DependsOn, want.DependsOn) {
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		t.Fatalf("child expansion differs:\n got %s\nwant %s", g, w)
	}

	// Types survive the pipe: whole numbers are ints, others floats, as the engine has them.
	for _, r := range got.Config.Resources {
		for k, v := range r.Properties {
			if reflect.TypeOf(v) != reflect.TypeOf(want.Config.Resources[indexOf(want, r.Name)].Properties[k]) {
				t.Fatalf("%s.%s is %T after the pipe", r.Name, k, v)
			}
		}
	}
}

func indexOf(exp *templates.Expansion, name string) int {
	for i, r := range exp.Config.Resources {
		if r.Name == name {
			return i
		}
	}

	return -1
}

func TestExpandErrorKeepsItsStructure(t *testing.T) {
	config := []byte("resources:\n- {name: web, type: web.jinja, properties: {port: nope}}\n")
	imports := map[string][]byte{
		"web.jinja":        []byte("resources: []\n"),
		"web.jinja.schema": []byte("properties:\n  port: {type: integer}\n"),
	}

	_, want := templates.Expand(context.Background(), config, imports, templates.Options{Env: env})
	_, err := (&Runner{}).Expand(context.Background(), config, imports, templates.Options{Env: env})
	var got, wantEE *templates.ExpandError
	if !errors.As(err, &got) || !errors.As(want, &wantEE) {
		t.Fatalf("want an ExpandError, got %T %v", err, err)
	}

	if got.Template != wantEE.Template || got.Resource != wantEE.Resource || got.Path != wantEE.Path || got.Msg != wantEE.Msg || got.Error() != want.Error() {
		t.Fatalf("error changed across the pipe:\n got %#v\nwant %#v", got, wantEE)
	}

	// A limit error is still a limit error.
	_, err = (&Runner{}).Expand(context.Background(), []byte("resources:\n- {name: a, type: a.jinja}\n"), map[string][]byte{"a.jinja": []byte("{% for i in range(100) %}x{% endfor %}")}, templates.Options{Limits: templates.Limits{Steps: 10}})
	if !errors.Is(err, templates.ErrLimit) {
		t.Fatalf("want a limit error, got %v", err)
	}
}

func TestWireErrorCarriesProblemsAndWarnings(t *testing.T) {
	w := &wireError{Expand: true, Msg: "bad", Problems: json.RawMessage(`[{"path":"port"}]`), Warnings: json.RawMessage(`["old"]`)}
	data, err := json.Marshal(w)
	if err != nil {
		t.Fatal(err)
	}

	var back wireError
	err = json.Unmarshal(data, &back)
	if err != nil || string(back.Problems) != `[{"path":"port"}]` || string(back.Warnings) != `["old"]` {
		t.Fatalf("problems/warnings lost on the wire: %s", data)
	}

	var ee *templates.ExpandError
	if !errors.As(back.decode(), &ee) || ee.Msg != "bad" {
		t.Fatalf("decode: %v", back.decode())
	}
}

// fakeFetcher serves one bundle, as a registry fetcher would.
type fakeFetcher struct{ asked []string }

func (f *fakeFetcher) Fetch(ctx context.Context, typ string) (*registry.Bundle, error) {
	f.asked = append(f.asked, typ)
	if typ != "github.com/acme/templates/web:v1" {
		return nil, fmt.Errorf("registry %s is not configured", typ)
	}

	return &registry.Bundle{Type: typ, Template: "web.py", Version: "v1.0.0", Files: map[string][]byte{
		"web.py": []byte("def GenerateConfig(context):\n    return {'resources': [{'name': 'web', 'type': 'shape', 'properties': {}}]}\n"),
	}}, nil
}

func TestFetchesGoThroughTheParent(t *testing.T) {
	f := &fakeFetcher{}
	config := []byte("resources:\n- {name: app, type: 'github.com/acme/templates/web:v1'}\n")
	exp, err := (&Runner{}).Expand(context.Background(), config, nil, templates.Options{Fetch: f})
	if err != nil {
		t.Fatal(err)
	}

	if len(f.asked) != 1 || exp.Fetched["github.com/acme/templates/web:v1/web.py"] == nil {
		t.Fatalf("asked %v, fetched %v", f.asked, exp.Fetched)
	}

	_, err = (&Runner{}).Expand(context.Background(), []byte("resources:\n- {name: app, type: 'github.com/evil/x/web:v1'}\n"), nil, templates.Options{Fetch: f})
	if err == nil || !strings.Contains(err.Error(), "not configured") {
		t.Fatalf("want the parent's fetch error, got %v", err)
	}

	// Without a fetcher, the child refuses as the engine does.
	_, want := templates.Expand(context.Background(), config, nil, templates.Options{})
	_, err = (&Runner{}).Expand(context.Background(), config, nil, templates.Options{})
	if err == nil || want == nil || err.Error() != want.Error() {
		t.Fatalf("without a fetcher: got %v, want %v", err, want)
	}
}

// TestHostileTemplatesFailCleanly are the red team's templates: each must end in a limit
// error within the budget, and this process must not grow.
func TestHostileTemplatesFailCleanly(t *testing.T) {
	star := func(body string) map[string][]byte {
		return map[string][]byte{"t.py": []byte("def GenerateConfig(context):\n" + body + "\n    return {'resources': []}\n")}
	}

	cases := []struct {
		name    string
		imports map[string][]byte
	}{
		{"billion-element list", star("    l = [0] * 1000000000")},
		{"list doubling", star("    l = [0] * 1000\n    for i in range(40):\n        l = l + l")},
		{"string doubling", star("    s = 'x' * 1000\n    for i in range(40):\n        s = s + s")},
		{"str of a deeply nested list", star("    l = []\n    for i in range(1000000):\n        l = [l]\n    s = str(l)")},
		{"jinja string repeat", map[string][]byte{"t.jinja": []byte("{{ 'x' * 100000000000 }}")}},
	}

	runner := &Runner{Budget: 5 * time.Second}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			typ := "t.py"
			if _, ok := c.imports["t.jinja"]; ok {
				typ = "t.jinja"
			}

			start := time.Now()
			_, err := runner.Expand(context.Background(), []byte("resources:\n- {name: x, type: "+typ+"}\n"), c.imports, templates.Options{})
			if err == nil {
				t.Fatal("hostile template expanded")
			}

			var ee *templates.ExpandError
			if !errors.As(err, &ee) {
				t.Fatalf("want an expansion error, got %T %v", err, err)
			}

			if time.Since(start) > runner.Budget+5*time.Second {
				t.Fatalf("took %s, past the budget", time.Since(start))
			}

			t.Logf("%s: %v (%s)", c.name, err, time.Since(start).Round(time.Millisecond))
		})
	}
}

// TestLargeLegitimateExpansionPasses: the memory limit leaves room for real work, the
// 10,000-shape benchmark config.
func TestLargeLegitimateExpansionPasses(t *testing.T) {
	if testing.Short() {
		t.Skip("expands 10,000 shapes: skipped in -short mode")
	}

	if raceEnabled {
		t.Skip("the race detector makes the child (this test binary) too slow for the 30 s budget on 10,000 shapes; the uninstrumented figure is BenchmarkIsolatedExpand10kShapes and the daemon's e2e runs")
	}

	exp, stats, err := (&Runner{}).expandStats(context.Background(), bigConfig, bigImports, templates.Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}

	if len(exp.Config.Resources) != 10000 {
		t.Fatalf("expanded to %d resources", len(exp.Config.Resources))
	}

	t.Logf("child baseline %d MiB virtual, peak %d MiB resident", stats.Baseline>>20, stats.MaxRSS>>20)
}

// TestResultCap: a result over MaxResult is refused. The template makes about 300 KiB in a
// moment, so the size limit is what stops it even on a loaded machine under -race (the
// 10,000-shape config took past the 30 s budget there, and the time limit answered first).
func TestResultCap(t *testing.T) {
	imports := map[string][]byte{"t.py": []byte("def GenerateConfig(context):\n    return {'resources': [{'name': 'r%d' % i, 'type': 'lxd-deployd:shape', 'properties': {'pad': 'x' * 120}} for i in range(2000)]}\n")}
	_, err := (&Runner{MaxResult: 64 << 10}).Expand(context.Background(), []byte("resources:\n- {name: x, type: t.py}\n"), imports, templates.Options{})
	if !errors.Is(err, templates.ErrLimit) || !strings.Contains(err.Error(), "size limit") {
		t.Fatalf("want the result size limit, got %v", err)
	}
}

func TestContextCancelKillsTheChild(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	imports := map[string][]byte{"t.py": []byte("def GenerateConfig(context):\n    l = []\n    for i in range(1000000):\n        l = [l]\n    s = str(l)\n    return {'resources': []}\n")}
	start := time.Now()
	_, err := (&Runner{}).Expand(ctx, []byte("resources:\n- {name: x, type: t.py}\n"), imports, templates.Options{})
	if err == nil || time.Since(start) > 5*time.Second {
		t.Fatalf("want a quick error, got %v after %s", err, time.Since(start))
	}
}

// bigConfig expands to 10,000 shapes: the files of the templates package's
// BenchmarkExpand10kShapes, so the two benchmarks compare the same work.
var bigConfig, bigImports = mustReadBig("../testdata/expand10k")

func mustReadBig(dir string) ([]byte, map[string][]byte) {
	config, err := os.ReadFile(dir + "/config.yaml")
	if err != nil {
		panic(err)
	}

	imports := map[string][]byte{}
	for _, name := range []string{"region.jinja", "zone.jinja", "rack.jinja"} {
		imports[name], err = os.ReadFile(dir + "/" + name)
		if err != nil {
			panic(err)
		}
	}

	return config, imports
}

// BenchmarkIsolatedExpand10kShapes is the cost of isolation: one child per expansion of the
// 10,000-shape config (compare BenchmarkExpand10kShapes in the templates package, in
// process). It reports the child's baseline address space and peak resident memory.
func BenchmarkIsolatedExpand10kShapes(b *testing.B) {
	var stats Stats
	for b.Loop() {
		exp, s, err := (&Runner{}).expandStats(context.Background(), bigConfig, bigImports, templates.Options{Env: env})
		if err != nil || len(exp.Config.Resources) != 10000 {
			b.Fatal(err)
		}

		stats = s
	}

	b.ReportMetric(float64(stats.Baseline>>20), "baseline-MiB")
	b.ReportMetric(float64(stats.MaxRSS>>20), "peak-rss-MiB")
}

// BenchmarkIsolatedExpandSmall is the fixed cost of a child: start, limits, one tiny
// template, answer.
func BenchmarkIsolatedExpandSmall(b *testing.B) {
	imports := map[string][]byte{"t.jinja": []byte("resources: [{name: a, type: shape}]\n")}
	for b.Loop() {
		_, err := (&Runner{}).Expand(context.Background(), []byte("resources:\n- {name: x, type: t.jinja}\n"), imports, templates.Options{})
		if err != nil {
			b.Fatal(err)
		}
	}
}

func TestConcurrencyCap(t *testing.T) {
	r := &Runner{MaxConcurrent: 1, Budget: 2 * time.Second}
	slow := map[string][]byte{"t.py": []byte("def GenerateConfig(context):\n    l = []\n    for i in range(1000000):\n        l = [l]\n    s = str(l)\n    return {'resources': []}\n")}
	done := make(chan error, 1)
	go func() {
		_, err := r.Expand(context.Background(), []byte("resources:\n- {name: x, type: t.py}\n"), slow, templates.Options{})
		done <- err
	}()

	time.Sleep(200 * time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err := r.Expand(ctx, []byte("resources: []\n"), nil, templates.Options{})
	if err == nil || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("a second expansion ran beside the first: %v", err)
	}

	<-done
	_, err = r.Expand(context.Background(), []byte("resources: []\n"), nil, templates.Options{})
	if err != nil {
		t.Fatalf("the slot was not released: %v", err)
	}
}

// The child expands with the caller's StrictUndefined: Jinja2's default Undefined without
// it (a warning), an error with it.
func TestChildStrictUndefined(t *testing.T) {
	config := []byte("resources:\n- {name: x, type: t.jinja}\n")
	imports := map[string][]byte{"t.jinja": []byte("resources: []\n# {{ missing }}\n")}
	exp, err := (&Runner{}).Expand(context.Background(), config, imports, templates.Options{})
	if err != nil || len(exp.Warnings) != 1 || !strings.Contains(exp.Warnings[0].String(), "t.jinja:2: missing is undefined") {
		t.Fatalf("lenient: %v, %v", exp, err)
	}

	_, err = (&Runner{}).Expand(context.Background(), config, imports, templates.Options{StrictUndefined: true})
	if err == nil || !strings.Contains(err.Error(), `Unable to evaluate name "missing"`) {
		t.Fatalf("strict: %v", err)
	}
}
