package templates

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// Limits of GatherImports: a config's files, not a whole directory tree.
const (
	gatherMaxFiles = 1000
	gatherMaxBytes = 32 << 20
)

var (
	quotedString = regexp.MustCompile(`['"]([^'"\s\\]{1,256})['"]`)
	yamlType     = regexp.MustCompile(`(?m)^\s*-?\s*type:\s*['"]?([^'"\s#]+)`)
	pyImportLine = regexp.MustCompile(`(?m)^\s*(?:from\s+(\S+)\s+import\s+([A-Za-z0-9_, ]+)|import\s+([A-Za-z0-9_.]+))`)
)

// GatherImports reads the config file at configPath and gathers the files it needs, for
// the CLI's local mode: the config's own imports, and every template named by a type,
// found next to the config, with its .schema and the schema's imports; then, recursively,
// the files those templates name (Jinja imports and includes, imports['file'], types of
// the resources they emit, Python imports of helper modules and packages). So imports: in
// a config is only needed for files nothing names, or that live elsewhere.
//
// Files found by name are looked for inside the config's directory only; the config's
// explicit imports may point anywhere the user can read.
func GatherImports(configPath string) (map[string][]byte, error) {
	config, err := os.ReadFile(configPath)
	if err != nil {
		return nil, err
	}

	dir := filepath.Dir(configPath)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}

	defer func() { _ = root.Close() }()

	g := &gatherer{root: root, imports: map[string][]byte{}}
	doc, err := parseYAML(config)
	if err != nil {
		return nil, fmt.Errorf("%s is not valid YAML: %w", configPath, err)
	}

	in, err := parseInput(doc, where{}, "the config")
	if err != nil {
		return nil, err
	}

	for _, imp := range in.imports {
		p := imp.Path
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}

		content, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("config import %s: %w", imp.Path, err)
		}

		err = g.add(imp.Key(), content)
		if err != nil {
			return nil, err
		}
	}

	g.scan(string(config))
	for typ := range in.defaults {
		g.want(typ)
	}

	for len(g.queue) > 0 && g.err == nil {
		name := g.queue[0]
		g.queue = g.queue[1:]
		g.visit(name)
	}

	if g.err != nil {
		return nil, g.err
	}

	return g.imports, nil
}

type gatherer struct {
	root    *os.Root
	imports map[string][]byte
	queue   []string
	seen    map[string]bool
	bytes   int
	err     error
}

func (g *gatherer) add(name string, content []byte) error {
	if len(g.imports) >= gatherMaxFiles || g.bytes+len(content) > gatherMaxBytes {
		return fmt.Errorf("the config needs more than %d files or %d bytes: is a type or a string naming a large file by mistake?", gatherMaxFiles, gatherMaxBytes)
	}

	g.imports[name] = content
	g.bytes += len(content)
	return nil
}

// want queues a name that may be a file next to the config.
func (g *gatherer) want(name string) {
	if g.seen == nil {
		g.seen = map[string]bool{}
	}

	name = path.Clean(name)
	if g.seen[name] || !fs.ValidPath(name) || name == "." || strings.HasPrefix(path.Base(name), ".") || registry.IsURL(name) {
		return
	}

	g.seen[name] = true
	g.queue = append(g.queue, name)
}

// visit imports name if it is a regular file next to the config, and scans it.
func (g *gatherer) visit(name string) {
	content, imported := g.imports[name] // An explicit import: scan it all the same.
	if !imported {
		info, err := g.root.Stat(filepath.FromSlash(name))
		if err != nil || !info.Mode().IsRegular() {
			return
		}

		content, err = g.root.ReadFile(filepath.FromSlash(name))
		if err != nil {
			g.err = err
			return
		}

		g.err = g.add(name, content)
		if g.err != nil {
			return
		}
	}

	if registry.IsTemplateFile(name) {
		g.want(name + ".schema")
	}

	if strings.HasSuffix(name, ".schema") {
		imports, err := registry.SchemaImports(content)
		if err != nil {
			g.err = fmt.Errorf("%s: %w", name, err)
			return
		}

		for _, imp := range imports {
			g.want(imp.Path)
		}

		return
	}

	if registry.IsTemplateFile(name) || path.Ext(name) == ".yaml" {
		g.scan(string(content))
	}

	if path.Ext(name) == ".py" || path.Ext(name) == ".star" {
		g.scanPython(string(content))
	}
}

// scan queues what a config or template names: types and quoted strings.
func (g *gatherer) scan(text string) {
	for _, m := range yamlType.FindAllStringSubmatch(text, -1) {
		if registry.IsTemplateFile(m[1]) {
			g.want(m[1])
		}
	}

	for _, m := range quotedString.FindAllStringSubmatch(text, -1) {
		g.want(m[1])
	}
}

// scanPython queues the helper modules a Python template imports.
func (g *gatherer) scanPython(text string) {
	for _, m := range pyImportLine.FindAllStringSubmatch(text, -1) {
		module := m[3]
		if m[1] != "" {
			module = m[1]
			for _, name := range strings.Split(m[2], ",") {
				g.wantModule(module + "." + strings.TrimSpace(strings.Split(strings.TrimSpace(name), " ")[0]))
			}
		}

		g.wantModule(module)
	}
}

func (g *gatherer) wantModule(module string) {
	parts := strings.Split(module, ".")
	for i := range parts {
		base := strings.Join(parts[:i+1], "/")
		g.want(base + "/__init__.py")
		if i == len(parts)-1 {
			g.want(base + ".py")
			g.want(base + ".star")
		}
	}
}
