package templates

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"strings"
	"testing"
	"time"
)

// The benchmark config (testdata/expand10k): 4 regions x 5 zones x 5 racks x 100 nodes =
// 10,000 shapes, through three levels of nested Jinja templates (130 template invocations).
// The isolate package's benchmark expands the same files in a child process.
var benchConfig, benchImports = mustReadBench("testdata/expand10k")

// mustReadBench reads a benchmark config and its imports from a directory.
func mustReadBench(dir string) ([]byte, map[string][]byte) {
	config, err := os.ReadFile(path.Join(dir, "config.yaml"))
	if err != nil {
		panic(err)
	}

	imports := map[string][]byte{}
	for _, name := range []string{"region.jinja", "zone.jinja", "rack.jinja"} {
		imports[name], err = os.ReadFile(path.Join(dir, name))
		if err != nil {
			panic(err)
		}
	}

	return config, imports
}

func expandBench(b *testing.B) *Expansion {
	exp, err := Expand(context.Background(), benchConfig, benchImports, Options{Env: Env{Deployment: "bench", Project: "default"}})
	if err != nil {
		b.Fatal(err)
	}

	if len(exp.Config.Resources) != 10000 {
		b.Fatalf("expanded to %d resources", len(exp.Config.Resources))
	}

	return exp
}

// BenchmarkExpand10kShapes expands the config to 10,000 shapes.
func BenchmarkExpand10kShapes(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		expandBench(b)
	}
}

// BenchmarkShapes10k decodes and validates the 10,000 expanded shapes.
func BenchmarkShapes10k(b *testing.B) {
	exp := expandBench(b)
	b.ResetTimer()
	for b.Loop() {
		shapes, _, err := Shapes(exp)
		if err != nil || len(shapes) != 10000 {
			b.Fatal(err)
		}
	}
}

// pythonRender renders one Jinja template the way Deployment Manager's expandybird did:
// Python's Jinja2, in a new Python process.
const pythonRender = `
import json, sys, jinja2
req = json.load(sys.stdin)
env = jinja2.Environment(loader=jinja2.DictLoader(req['imports']))
sys.stdout.write(env.get_template(req['template']).render(env=req['env'], properties=req['properties'], imports=req['imports']))
`

// BenchmarkExpand10kShapesPythonJinja2 does the same expansion with one python3 process
// per template invocation (Deployment Manager's design, with Python's Jinja2), then
// expands with this package and reports how many times slower the Python design is.
func BenchmarkExpand10kShapesPythonJinja2(b *testing.B) {
	if testing.Short() {
		b.Skip("-short: the Python design runs 130 python3 processes per iteration")
	}

	err := exec.Command("python3", "-c", "import jinja2").Run()
	if err != nil {
		b.Skipf("python3 with jinja2 is needed for the comparison (apt-get install python3-jinja2): %v", err)
	}

	imports := map[string]string{}
	for k, v := range benchImports {
		imports[k] = string(v)
	}

	start := time.Now()
	for b.Loop() {
		doc, err := parseYAML(benchConfig)
		if err != nil {
			b.Fatal(err)
		}

		in, err := parseInput(doc, where{}, "the config")
		if err != nil {
			b.Fatal(err)
		}

		n, err := expandWithPython(in.resources, imports)
		if err != nil || n != 10000 {
			b.Fatalf("python expansion: %d shapes, %v", n, err)
		}
	}

	python := time.Since(start) / time.Duration(b.N)
	b.StopTimer()

	const runs = 5
	expandBench(b) // Warm up after the Python run.
	start = time.Now()
	for range runs {
		_, err := Expand(context.Background(), benchConfig, benchImports, Options{Env: Env{Deployment: "bench", Project: "default"}})
		if err != nil {
			b.Fatal(err)
		}
	}

	goTime := time.Since(start) / runs
	ratio := float64(python) / float64(goTime)
	b.ReportMetric(ratio, "x-slower-than-go")
	fmt.Printf("10,000 shapes: Python Jinja2, one process per template: %v; this package: %v; ratio %.1fx\n", python.Round(time.Millisecond), goTime.Round(time.Millisecond), ratio)
}

// expandWithPython expands resources recursively, rendering each template in python3.
func expandWithPython(resources []Resource, imports map[string]string) (int, error) {
	shapes := 0
	for _, r := range resources {
		if path.Ext(r.Type) != ".jinja" {
			shapes++
			continue
		}

		req, err := json.Marshal(map[string]any{
			"template":   r.Type,
			"env":        map[string]string{"deployment": "bench", "project": "default", "name": r.Name, "type": r.Type},
			"properties": r.Properties,
			"imports":    imports,
		})
		if err != nil {
			return 0, err
		}

		cmd := exec.Command("python3", "-c", pythonRender)
		cmd.Stdin = strings.NewReader(string(req))
		out, err := cmd.Output()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", r.Type, err)
		}

		doc, err := parseYAML(out)
		if err != nil {
			return 0, err
		}

		in, err := parseInput(doc, where{}, "output")
		if err != nil {
			return 0, err
		}

		n, err := expandWithPython(in.resources, imports)
		if err != nil {
			return 0, err
		}

		shapes += n
	}

	return shapes, nil
}
