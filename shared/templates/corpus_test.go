package templates

import (
	"context"
	"errors"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The corpus: each directory of test/testdata/templates is a config (config.yaml), the
// files it imports, and what expanding it gives: expected.yaml (config, layout, order, and
// what Shapes says) or expected-error.txt (the exact error). options.yaml may set env and
// limits. "go test -update" rewrites the expected files: review them before committing.
var update = flag.Bool("update", false, "rewrite the expected files of the template corpus")

const corpusDir = "../../test/testdata/templates"

// corpusFiles are the files of a case that are not imports.
var corpusFiles = map[string]bool{"config.yaml": true, "options.yaml": true, "expected.yaml": true, "expected-error.txt": true, "README.md": true, "expand.txt": true}

type corpusOptions struct {
	Env    Env `yaml:"env"`
	Limits struct {
		Steps       int64         `yaml:"steps"`
		Timeout     time.Duration `yaml:"timeout"`
		OutputBytes int           `yaml:"output_bytes"`
		Depth       int           `yaml:"depth"`
		Resources   int           `yaml:"resources"`
	} `yaml:"limits"`

	// StrictUndefined expands with Options.StrictUndefined (lxd-deploy expand
	// --strict-undefined).
	StrictUndefined bool `yaml:"strict_undefined"`

	// NoGather skips checking that GatherImports finds what the case needs (cases that
	// test missing or explicitly named imports).
	NoGather bool `yaml:"no_gather"`
}

type corpusResult struct {
	Config      Config              `yaml:"config"`
	Layout      Layout              `yaml:"layout"`
	Order       []string            `yaml:"order"`
	DependsOn   map[string][]string `yaml:"depends_on,omitempty"`
	Shapes      []string            `yaml:"shapes,omitempty"`
	ShapesError string              `yaml:"shapes_error,omitempty"`
	Warnings    []string            `yaml:"warnings,omitempty"`
}

func TestCorpus(t *testing.T) {
	entries, err := os.ReadDir(corpusDir)
	if err != nil {
		t.Fatal(err)
	}

	for _, entry := range entries {
		if !entry.IsDir() {
			continue
		}

		dir := filepath.Join(corpusDir, entry.Name())
		t.Run(entry.Name(), func(t *testing.T) {
			t.Parallel()
			runCorpusCase(t, dir)
		})
	}
}

func runCorpusCase(t *testing.T, dir string) {
	config, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	opts := corpusOptions{Env: Env{Deployment: "demo", Project: "default"}}
	data, err := os.ReadFile(filepath.Join(dir, "options.yaml"))
	if err == nil {
		err = yaml.Unmarshal(data, &opts)
	}

	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}

	imports := readImports(t, dir)
	doc, err := parseYAML(config)
	if err == nil {
		in, err := parseInput(doc, where{}, "the config")
		for i := 0; err == nil && i < len(in.imports); i++ {
			if imp := in.imports[i]; imp.Name != "" {
				imports[imp.Name] = imports[imp.Path] // As the CLI sends a named import.
			}
		}
	}
	options := Options{Env: opts.Env, Limits: Limits(opts.Limits), StrictUndefined: opts.StrictUndefined}
	got := expandCase(t, config, imports, options)
	if !opts.NoGather && !strings.HasPrefix(got, "error: ") {
		gathered, err := GatherImports(filepath.Join(dir, "config.yaml"))
		if err != nil {
			t.Fatalf("GatherImports: %v", err)
		}

		again := expandCase(t, config, gathered, options)
		if again != got {
			t.Errorf("expanding with the imports GatherImports found differs:\n%s\nwant:\n%s", again, got)
		}
	}

	expectedFile, errorFile := filepath.Join(dir, "expected.yaml"), filepath.Join(dir, "expected-error.txt")
	if *update {
		_ = os.Remove(expectedFile)
		_ = os.Remove(errorFile)
		if strings.HasPrefix(got, "error: ") {
			err = os.WriteFile(errorFile, []byte(strings.TrimPrefix(got, "error: ")+"\n"), 0o644)
		} else {
			err = os.WriteFile(expectedFile, []byte(got), 0o644)
		}

		if err != nil {
			t.Fatal(err)
		}

		return
	}

	want, err := os.ReadFile(expectedFile)
	if errors.Is(err, fs.ErrNotExist) {
		want, err = os.ReadFile(errorFile)
		want = []byte("error: " + strings.TrimSuffix(string(want), "\n"))
	}

	if err != nil {
		t.Fatalf("no expected.yaml or expected-error.txt (run go test -update and review): %v", err)
	}

	if got != string(want) {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// expandCase expands and renders the result, or "error: " and the error.
func expandCase(t *testing.T, config []byte, imports map[string][]byte, opts Options) string {
	exp, err := Expand(context.Background(), config, imports, opts)
	if err != nil {
		var expandErr *ExpandError
		if !errors.As(err, &expandErr) {
			t.Errorf("error is a %T, not an *ExpandError: %v", err, err)
		}

		if expandErr != nil {
			return "error: " + expandErr.Detail() // Every problem, one per line.
		}

		return "error: " + err.Error()
	}

	result := corpusResult{Config: exp.Config, Layout: exp.Layout, Order: exp.Order, DependsOn: exp.DependsOn}
	for _, w := range exp.Warnings {
		result.Warnings = append(result.Warnings, w.String())
	}

	_, order, err := Shapes(exp)
	if err != nil {
		result.ShapesError = err.Error()
	} else {
		result.Shapes = order
	}

	var out strings.Builder
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	err = enc.Encode(result)
	if err != nil {
		t.Fatal(err)
	}

	return out.String()
}

// readImports reads every file of a case that is not config, options or expectations.
func readImports(t *testing.T, dir string) map[string][]byte {
	imports := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}

		rel, err := filepath.Rel(dir, path)
		if err != nil || corpusFiles[rel] {
			return err
		}

		content, err := os.ReadFile(path)
		imports[filepath.ToSlash(rel)] = content
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	return imports
}
