package registry

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A registry served as a plain HTTP directory, without index.json, by a server that lists
// directories (Go's file server, as nginx's autoindex): it resolves as with an index.
func TestHTTPRegistryListing(t *testing.T) {
	dir := writeRegistry(t)
	server := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer server.Close()

	checkFetcher(t, &Fetcher{
		Registries: map[string]string{"github.com/acme/templates": server.URL + "/"},
		Default:    "github.com/acme/templates/big-data",
		Client:     server.Client(),
	})

	// A template the listing does not have.
	f := &Fetcher{Registries: map[string]string{"github.com/acme/templates": server.URL}, Client: server.Client()}
	_, err := f.Fetch(context.Background(), "github.com/acme/templates/nothing:v1")
	if err == nil || !strings.Contains(err.Error(), "template nothing is not in registry") {
		t.Errorf("missing template: %v", err)
	}
}

// noListing serves the files of dir and refuses directories, as raw Git hosting does.
func noListing(dir string) http.Handler {
	files := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(r.URL.Path)))
		if err != nil || info.IsDir() {
			http.NotFound(w, r)
			return
		}

		files.ServeHTTP(w, r)
	})
}

// A registry laid out as Deployment Manager's were, on a server that cannot list and
// without index.json: a version directory named as asked is read the way DM read a
// template URL (template, schema, the schema's imports); other versions need the index.
func TestHTTPRegistryNoListing(t *testing.T) {
	dir := writeRegistry(t)
	files := map[string]string{
		"redis/v1/redis.jinja":                  "resources: []\n",
		"redis/v1/redis.jinja.schema":           "imports: [helpers/common.jinja, {path: files/redis.conf, name: conf}]\n",
		"redis/v1/helpers/common.jinja":         "{% macro m() %}{% endmacro %}\n",
		"redis/v1/files/redis.conf":             "maxmemory 1mb\n",
		"redis/v1/example.yaml":                 "not read: nothing names it\n",
		"big-data/spark/v2.1.0/spark.py":        "def GenerateConfig(context):\n  return {'resources': []}\n",
		"big-data/spark/v2.1.0/spark.py.schema": "properties: {}\n",
	}

	writeFiles(t, dir, files)

	server := httptest.NewServer(noListing(dir))
	defer server.Close()

	f := &Fetcher{Registries: map[string]string{"github.com/acme/templates": server.URL}, Default: "github.com/acme/templates", Client: server.Client()}
	ctx := context.Background()
	b, err := f.Fetch(ctx, "redis:v1")
	if err != nil {
		t.Fatal(err)
	}

	if b.Version != "v1" || b.Template != "redis.jinja" || len(b.Files) != 4 || string(b.Files["conf"]) != "maxmemory 1mb\n" || b.Files["helpers/common.jinja"] == nil {
		t.Errorf("redis:v1 = %s %s %v", b.Version, b.Template, b.Files)
	}

	b, err = f.Fetch(ctx, "github.com/acme/templates/big-data/spark:v2.1.0")
	if err != nil || b.Template != "spark.py" || len(b.Files) != 2 {
		t.Errorf("spark:v2.1.0 = %v, %+v", err, b)
	}

	// web has v1.0.2 beside v1, but nothing can tell: v1.0 has no directory of its own.
	_, err = f.Fetch(ctx, "web:v1.0")
	if err == nil || !strings.Contains(err.Error(), `cannot list its directories`) || !strings.Contains(err.Error(), `lxd-deploy registry index DIR`) {
		t.Errorf("web:v1.0 without index or listing: %v", err)
	}

	// With the index, the same registry resolves to the highest patch again.
	_, err = WriteIndex(dir)
	if err != nil {
		t.Fatal(err)
	}

	b, err = f.Fetch(ctx, "web:v1.0")
	if err != nil || b.Version != "v1.0.2" {
		t.Errorf("web:v1.0 with the index: %v, %+v", err, b)
	}
}
