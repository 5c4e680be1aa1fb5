package registry

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	available := []string{"v1", "v1.0.1", "v1.0.2", "v1.1", "v1.1.3", "v2", "README.md"}
	tests := []struct {
		requested string
		want      string
		err       string
	}{
		{"v1", "v1.0.2", ""},     // highest patch of 1.0
		{"v1.0", "v1.0.2", ""},   // same
		{"v1.0.0", "v1.0.2", ""}, // same
		{"v1.0.2", "v1.0.2", ""}, // itself
		{"v1.1", "v1.1.3", ""},   // the higher minor only when asked for
		{"v1.1.1", "v1.1.3", ""}, // a higher patch of 1.1
		{"v2", "v2", ""},         // v2 is v2.0.0
		{"v1.0.3", "", "no version matches v1.0.3 (>= v1.0.3, < v1.1.0; a higher minor version must be asked for explicitly): available versions are v1, v1.0.1, v1.0.2, v1.1, v1.1.3, v2"},
		{"v1.2", "", "no version matches v1.2"}, // never v1.1.x, never v2
		{"v3", "", "no version matches v3"},
		{"1.0", "", `version "1.0" is not valid`},
		{"v1.0.0-rc1", "", "is not valid"},
	}

	for _, tt := range tests {
		got, err := Resolve(tt.requested, available)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Resolve(%s) = %q, %v; want error containing %q", tt.requested, got, err, tt.err)
			}

			continue
		}

		if err != nil || got != tt.want {
			t.Errorf("Resolve(%s) = %q, %v; want %q", tt.requested, got, err, tt.want)
		}
	}
}

func TestParseReference(t *testing.T) {
	tests := map[string]Reference{
		"github.com/acme/templates/web:v1":              {Registry: "github.com/acme/templates", Template: "web", Version: "v1"},
		"github.com/acme/templates/big-data/web:v1.1.0": {Registry: "github.com/acme/templates", Collection: "big-data", Template: "web", Version: "v1.1.0"},
		"github.com/o/r/dot.delimited.ok/t:v2":          {Registry: "github.com/o/r", Collection: "dot.delimited.ok", Template: "t", Version: "v2"},
		"web:v1":                                        {Template: "web", Version: "v1"},
	}

	for s, want := range tests {
		got, err := ParseReference(s)
		if err != nil || got != want || got.String() != s {
			t.Errorf("ParseReference(%s) = %+v, %v; want %+v", s, got, err, want)
		}
	}

	for _, s := range []string{"github.com/o/r/multiple/segments/t:v1", "Service", "shape", "web.jinja", "web:latest", "https://h/t.py", "o/r/t:v1"} {
		if IsReference(s) {
			t.Errorf("IsReference(%s) = true", s)
		}
	}
}

// writeRegistry lays out a small registry (seed 001): a root collection and a named one.
func writeRegistry(t *testing.T) string {
	dir := t.TempDir()
	files := map[string]string{
		"web/v1/web.jinja":                "resources: []  # v1\n",
		"web/v1/web.jinja.schema":         "properties: {}\n",
		"web/v1.0.2/web.jinja":            "resources: []  # v1.0.2\n",
		"web/v1.0.2/helpers/macros.jinja": "{% macro m() %}{% endmacro %}\n",
		"web/v1.1/web.jinja":              "resources: []  # v1.1\n",
		"web/v1.1/example.yaml":           "resources: []\n",
		"big-data/db/v2/db.py":            "def GenerateConfig(context):\n    return {'resources': []}\n",
		"big-data/db/v2/.hidden":          "skipped",
		"README.md":                       "a registry",
		"notes/v1/unrelated.txt":          "a version directory without its template file",
	}

	writeFiles(t, dir, files)
	return dir
}

// writeFiles writes files (slash-separated path -> content) under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		err := os.MkdirAll(filepath.Dir(p), 0o755)
		if err == nil {
			err = os.WriteFile(p, []byte(content), 0o644)
		}

		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestIndex(t *testing.T) {
	dir := writeRegistry(t)
	idx, err := WriteIndex(dir)
	if err != nil {
		t.Fatal(err)
	}

	data, err := os.ReadFile(filepath.Join(dir, IndexFileName))
	if err != nil {
		t.Fatal(err)
	}

	read := &Index{}
	err = json.Unmarshal(data, read)
	if err != nil || !reflect.DeepEqual(read, idx) {
		t.Fatalf("index.json does not read back: %v", err)
	}

	summary := []string{}
	for _, tpl := range idx.Templates {
		for _, v := range tpl.Versions {
			files := []string{}
			for _, f := range v.Files {
				files = append(files, f.Path)
			}

			summary = append(summary, tpl.Collection+"/"+tpl.Name+"@"+v.Version+"="+v.Template+"["+strings.Join(files, ",")+"]")
		}
	}

	want := []string{
		"/web@v1=web.jinja[web.jinja,web.jinja.schema]",
		"/web@v1.0.2=web.jinja[helpers/macros.jinja,web.jinja]",
		"/web@v1.1=web.jinja[example.yaml,web.jinja]",
		"big-data/db@v2=db.py[db.py]",
	}

	if !reflect.DeepEqual(summary, want) {
		t.Errorf("index:\n%s\nwant:\n%s", strings.Join(summary, "\n"), strings.Join(want, "\n"))
	}
}

// checkFetcher fetches from a registry served by dir or by HTTP and checks what came back.
func checkFetcher(t *testing.T, f *Fetcher) {
	ctx := context.Background()
	b, err := f.Fetch(ctx, "github.com/acme/templates/web:v1")
	if err != nil {
		t.Fatal(err)
	}

	if b.Version != "v1.0.2" || b.Template != "web.jinja" || string(b.Files["web.jinja"]) != "resources: []  # v1.0.2\n" || b.Files["helpers/macros.jinja"] == nil {
		t.Errorf("web:v1 resolved to %s %s with %d files", b.Version, b.Template, len(b.Files))
	}

	imports := map[string][]byte{}
	b.Embed(imports)
	if imports["github.com/acme/templates/web:v1/web.jinja"] == nil {
		t.Errorf("Embed keys: %v", imports)
	}

	b, err = f.Fetch(ctx, "github.com/acme/templates/web:v1.1")
	if err != nil || b.Version != "v1.1" {
		t.Errorf("web:v1.1: %v, %+v", err, b)
	}

	b, err = f.Fetch(ctx, "db:v2") // The default registry and collection.
	if err != nil || b.Template != "db.py" || len(b.Files) != 1 {
		t.Errorf("db:v2: %v, %+v", err, b)
	}

	_, err = f.Fetch(ctx, "github.com/acme/templates/web:v1.2")
	if err == nil || !strings.Contains(err.Error(), "no version matches v1.2") {
		t.Errorf("web:v1.2: %v", err)
	}

	_, err = f.Fetch(ctx, "github.com/other/templates/web:v1")
	if err == nil || !strings.Contains(err.Error(), "registry github.com/other/templates is not configured") {
		t.Errorf("unlisted registry: %v", err)
	}
}

func TestDirRegistry(t *testing.T) {
	dir := writeRegistry(t)
	checkFetcher(t, &Fetcher{
		Registries: map[string]string{"github.com/acme/templates": dir},
		Default:    "github.com/acme/templates/big-data",
	})
}

func TestHTTPRegistry(t *testing.T) {
	dir := writeRegistry(t)
	_, err := WriteIndex(dir)
	if err != nil {
		t.Fatal(err)
	}

	server := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer server.Close()

	f := &Fetcher{
		Registries: map[string]string{"github.com/acme/templates": server.URL + "/"},
		Default:    "github.com/acme/templates/big-data",
		Client:     server.Client(),
	}

	checkFetcher(t, f)

	// A plain URL under the listed registry: the file, its schema, the schema's imports.
	err = os.WriteFile(filepath.Join(dir, "web/v1/web.jinja.schema"), []byte("imports:\n- path: helpers/h.jinja\n"), 0o644)
	if err == nil {
		err = os.MkdirAll(filepath.Join(dir, "web/v1/helpers"), 0o755)
	}

	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "web/v1/helpers/h.jinja"), []byte("helper"), 0o644)
	}

	if err != nil {
		t.Fatal(err)
	}

	u := server.URL + "/web/v1/web.jinja"
	b, err := f.Fetch(context.Background(), u)
	if err != nil || len(b.Files) != 3 || string(b.Files["helpers/h.jinja"]) != "helper" {
		t.Fatalf("fetch %s: %v %+v", u, err, b)
	}

	imports := map[string][]byte{}
	b.Embed(imports)
	if imports[u] == nil || imports[u+".schema"] == nil || imports[server.URL+"/web/v1/helpers/h.jinja"] == nil {
		t.Errorf("embedded URL bundle keys: %v", imports)
	}

	// A URL elsewhere is refused unless URLs are allowed (the CLI).
	_, err = f.Fetch(context.Background(), "https://elsewhere.example/t.py")
	if err == nil || !strings.Contains(err.Error(), "not under a configured registry") {
		t.Errorf("unlisted URL: %v", err)
	}

	// A file changed after indexing fails its digest.
	err = os.WriteFile(filepath.Join(dir, "web/v1.0.2/web.jinja"), []byte("changed"), 0o644)
	if err != nil {
		t.Fatal(err)
	}

	_, err = (&Fetcher{Registries: f.Registries, Client: server.Client()}).Fetch(context.Background(), "github.com/acme/templates/web:v1")
	if err == nil || !strings.Contains(err.Error(), "does not match the digest") {
		t.Errorf("changed file: %v", err)
	}

	// Size caps.
	_, err = (&Fetcher{Registries: f.Registries, Client: server.Client(), Limits: Limits{FileBytes: 4}}).Fetch(context.Background(), "github.com/acme/templates/web:v1.1")
	if err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("file cap: %v", err)
	}
}
