package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// DefaultGitHub is where an unlisted github.com registry is read from when Fetcher.GitHub is
// set to it: the raw files of the repository's default branch.
const DefaultGitHub = "https://raw.githubusercontent.com/{owner}/{repo}/master/"

// Fetcher fetches templates from registries and URLs, for the CLI (which embeds what it
// fetched in the imports it sends) and the daemon (which fetches only from the registries
// its configuration lists).
type Fetcher struct {
	// Registries maps a registry "<host>/<owner>/<repo>" to where it is served: an http(s)
	// base URL (with an index.json) or a local directory.
	// Example: {"github.com/acme/templates": "https://templates.acme.example/"}
	Registries map[string]string

	// Default is the registry, optionally with a collection ("github.com/acme/templates/web"),
	// that short references ("<template>:<version>") resolve against.
	Default string

	// GitHub, when set (e.g. to DefaultGitHub), is a base URL pattern with {owner} and
	// {repo} used for github.com registries that Registries does not list. Empty: unlisted
	// registries are refused, as a daemon should.
	GitHub string

	// URLs allows plain template URLs anywhere (the CLI). When false (the daemon), a plain
	// URL is fetched only when it is under the base URL of a listed registry.
	URLs bool

	// Client makes the HTTP requests (default http.DefaultClient).
	Client *http.Client

	// Limits bound each fetch.
	Limits Limits
}

// Bundle is what was fetched for one template type: the template file and the files next to
// it (schema, helpers), keyed by path relative to the template's directory.
type Bundle struct {
	// Type is the reference or URL as written in the config.
	Type string

	// Template is the template file's path in Files, e.g. "web.py".
	Template string

	// Version is the version directory a reference resolved to ("" for a URL).
	Version string

	// Files of the template, keyed by relative path.
	Files map[string][]byte
}

// Embed adds the bundle's files to imports under the bundle's prefix (see Prefix), which is
// where the expander looks for them before it asks a fetcher.
func (b *Bundle) Embed(imports map[string][]byte) {
	prefix := Prefix(b.Type)
	for p, content := range b.Files {
		imports[prefix+p] = content
	}
}

// Fetch fetches the template named by typ, a registry reference or a URL.
func (f *Fetcher) Fetch(ctx context.Context, typ string) (*Bundle, error) {
	switch {
	case IsReference(typ):
		return f.fetchReference(ctx, typ)
	case IsURL(typ):
		return f.fetchURL(ctx, typ)
	}

	return nil, fmt.Errorf("%q is neither a template reference nor a URL", typ)
}

func (f *Fetcher) fetchReference(ctx context.Context, typ string) (*Bundle, error) {
	ref, err := ParseReference(typ)
	if err != nil {
		return nil, err
	}

	if ref.Registry == "" {
		if f.Default == "" {
			return nil, fmt.Errorf("template %s names no registry and no default registry is configured: write github.com/<owner>/<repo>/%s or configure a default registry", typ, typ)
		}

		err := ValidRegistry(f.Default)
		if err != nil {
			return nil, fmt.Errorf("default %w", err)
		}

		parts := strings.Split(f.Default, "/")
		ref.Registry = strings.Join(parts[:3], "/")
		if len(parts) == 4 {
			ref.Collection = parts[3]
		}
	}

	src, err := f.source(ref.Registry)
	if err != nil {
		return nil, err
	}

	versions, err := src.Versions(ctx, ref.Collection, ref.Template)
	version := ""
	switch {
	case errors.Is(err, errCannotList):
		// No index and no listing: only the version directory named as asked can be read.
		version = ref.Version
	case err != nil:
		return nil, err
	default:
		version, err = Resolve(ref.Version, versions)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", typ, err)
		}
	}

	files, err := src.Files(ctx, ref.Collection, ref.Template, version)
	if err != nil {
		return nil, err
	}

	template := templateFile(ref.Template, files)
	if template == "" {
		return nil, fmt.Errorf("template %s %s has no %s.py, .jinja or .star file", typ, version, ref.Template)
	}

	return &Bundle{Type: typ, Template: template, Version: version, Files: files}, nil
}

// ValidRegistry checks a registry name as a default registry is written:
// <host>/<owner>/<repo>[/<collection>].
func ValidRegistry(name string) error {
	_, err := ParseReference(name + "/t:v1")
	parts := strings.Split(name, "/")
	if err != nil || len(parts) < 3 || len(parts) > 4 {
		return fmt.Errorf("registry %q is not valid: write <host>/<owner>/<repo>[/<collection>], e.g. github.com/acme/templates", name)
	}

	return nil
}

// source returns where registry is served, refusing registries that are not configured.
func (f *Fetcher) source(registry string) (Source, error) {
	where := f.Registries[registry]
	if where == "" && f.GitHub != "" && strings.HasPrefix(registry, "github.com/") {
		parts := strings.Split(registry, "/")
		where = strings.NewReplacer("{owner}", parts[1], "{repo}", parts[2]).Replace(f.GitHub)
	}

	if where == "" {
		listed := make([]string, 0, len(f.Registries))
		for name := range f.Registries {
			listed = append(listed, name)
		}

		sort.Strings(listed)
		configured := "none"
		if len(listed) > 0 {
			configured = strings.Join(listed, ", ")
		}

		return nil, fmt.Errorf("registry %s is not configured (configured: %s): add it to the registries", registry, configured)
	}

	if IsURL(where) {
		return &HTTPSource{Base: where, Client: f.Client, Limits: f.Limits}, nil
	}

	return &DirSource{Dir: where, Limits: f.Limits}, nil
}

// fetchURL fetches a template by URL the way Deployment Manager did (see fetchDM).
func (f *Fetcher) fetchURL(ctx context.Context, u string) (*Bundle, error) {
	if !f.URLs && !f.listedURL(u) {
		return nil, fmt.Errorf("template URL %s is not under a configured registry: add its registry, or embed the template in the config's imports with the CLI", u)
	}

	parsed, err := parseHTTPURL(u)
	if err != nil {
		return nil, err
	}

	// Redirects stay inside the registry the URL is under (the daemon), or on the URL's
	// own scheme and host (the CLI with plain URLs).
	within := f.listedBase(parsed)
	if within == nil {
		within = origin(parsed)
	}

	return fetchDM(ctx, confine(f.Client, within), f.Limits.withDefaults(), u)
}

// fetchDM fetches a template file the way Deployment Manager did: the file, then
// <file>.schema if there is one, then the files the schema imports, relative to the file.
// A missing template file is errNotFound. The client is already confined to the registry.
func fetchDM(ctx context.Context, client *http.Client, limits Limits, u string) (*Bundle, error) {
	name := path.Base(u)
	dir := Prefix(u)
	content, err := httpGet(ctx, client, u, limits.FileBytes, limits)
	if err != nil {
		return nil, err
	}

	b := &Bundle{Type: u, Template: name, Files: map[string][]byte{name: content}}
	schema, err := httpGet(ctx, client, u+".schema", limits.FileBytes, limits)
	if errors.Is(err, errNotFound) {
		return b, nil // A template needs no schema.
	}

	if err != nil {
		return nil, err
	}

	b.Files[name+".schema"] = schema
	imports, err := SchemaImports(schema)
	if err != nil {
		return nil, fmt.Errorf("%s.schema: %w", u, err)
	}

	total := int64(len(content) + len(schema))
	for _, imp := range imports {
		err := checkRelative(imp.Path)
		if err != nil {
			return nil, fmt.Errorf("%s.schema: imports: %w", u, err)
		}

		if len(b.Files) >= limits.Files {
			return nil, fmt.Errorf("%s imports more than %d files", u, limits.Files)
		}

		data, err := httpGet(ctx, client, dir+escapePath(imp.Path), limits.FileBytes, limits)
		if err != nil {
			return nil, err
		}

		total += int64(len(data))
		if total > limits.BundleBytes {
			return nil, fmt.Errorf("%s and its imports are over the %d-byte limit", u, limits.BundleBytes)
		}

		b.Files[imp.Key()] = data
	}

	return b, nil
}

// listedURL says whether u is under the base URL of a configured registry, compared as
// parsed URLs with clean paths (a "../" cannot climb out of the registry).
func (f *Fetcher) listedURL(u string) bool {
	parsed, err := parseHTTPURL(u)
	if err != nil {
		return false
	}

	return f.listedBase(parsed) != nil
}

// listedBase is the base URL of the configured registry u is under, or nil.
func (f *Fetcher) listedBase(u *url.URL) *url.URL {
	for _, where := range f.Registries {
		if !IsURL(where) {
			continue
		}

		base, err := parseHTTPURL(where)
		if err == nil && under(u, base) && u.Path != base.Path {
			return base
		}
	}

	return nil
}

// Import is one entry of an "imports" list, in a config or a schema.
type Import struct {
	// Path of the file, relative to the config or template
	Path string `yaml:"path" json:"path"`

	// Name the file is imported as (default: Path)
	Name string `yaml:"name,omitempty" json:"name,omitempty"`
}

// Key is the name under which the import is visible to templates.
func (i Import) Key() string {
	if i.Name != "" {
		return i.Name
	}

	return i.Path
}

// UnmarshalYAML reads an import written as {path: FILE[, name: NAME]} or as the plain
// string FILE (Deployment Manager accepted both).
func (i *Import) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Tag == "!!str" {
		if n.Value == "" {
			return fmt.Errorf("line %d: an import cannot be an empty string", n.Line)
		}

		*i = Import{Path: n.Value}
		return nil
	}

	var full struct {
		Path string `yaml:"path"`
		Name string `yaml:"name"`
	}

	err := n.Decode(&full)
	if err != nil {
		return fmt.Errorf("line %d: an import is FILE or {path: FILE, name: NAME}", n.Line)
	}

	*i = Import{Path: full.Path, Name: full.Name}
	return nil
}

// SchemaImports reads the "imports" list of a schema file.
func SchemaImports(schema []byte) ([]Import, error) {
	var s struct {
		Imports []Import `yaml:"imports"`
	}

	err := yaml.Unmarshal(schema, &s)
	if err != nil {
		// Not the parser's message: it may quote the file, which may be anything a server
		// sent.
		return nil, errors.New("schema is not valid YAML with an imports list of {path, name}")
	}

	return s.Imports, nil
}
