package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	yaml3 "go.yaml.in/yaml/v3"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/isolate"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// Templated configs (doc/templates.md): the CLI reads a config and the files it needs
// (templates.GatherImports), fetches the registry and URL templates it names, and sends it
// all to the daemon, which expands it again and applies it. "expand" does the first half
// locally and prints the result.

// cliRegistry names the registry that --registry URL|DIR serves, for short references
// ("<template>:<version>"). ".invalid" is reserved: it can never be a real registry.
const cliRegistry = "registry.invalid/lxd-deploy/cli"

// expandTimeout bounds a local expansion, fetches included.
const expandTimeout = 2 * time.Minute

// templateFlags are the flags of the commands that read a templated config.
type templateFlags struct {
	properties []string
	registries []string

	// strictUndefined sets the config's strict_undefined: true, so that the local expansion
	// and the daemon's both use Jinja's StrictUndefined.
	strictUndefined bool

	// From config.yml (see app.configureRegistries): registries and the default one.
	configured      map[string]string
	defaultRegistry string
}

func (f *templateFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.properties, "properties", nil, "set deployment-level properties of the config: key=value,... (values are YAML: 3, true, [a, b]; a dotted key sets a nested value; repeatable)")
	cmd.Flags().BoolVar(&f.strictUndefined, "strict-undefined", false, "make an undefined name, key or attribute in a Jinja template an error where it is looked up (Jinja's StrictUndefined), instead of Jinja2's default: falsy and rendered as nothing, with a warning; sets strict_undefined: true in the config sent")
	cmd.Flags().StringArrayVar(&f.registries, "registry", nil, "where templates named by registry references are fetched from: URL or DIR for short references (<template>:<version>), or <host>/<owner>/<repo>=URL|DIR for one registry (repeatable)")
}

// fetcher returns the CLI's fetcher: the registries given with --registry, any github.com
// registry from GitHub, and plain template URLs. extra is a registry reference whose
// registry a bare --registry also serves (deploy's template).
func (f *templateFlags) fetcher(extra string) (*registry.Fetcher, error) {
	fetcher := &registry.Fetcher{Registries: map[string]string{}, Default: f.defaultRegistry, GitHub: registry.DefaultGitHub, URLs: true}
	for name, where := range f.configured {
		fetcher.Registries[name] = where
	}

	for _, arg := range f.registries {
		name, where, named := strings.Cut(arg, "=")
		if named && (strings.Contains(name, ":") || strings.Count(name, "/") != 2) {
			named = false // A URL with a query, not a registry name.
		}

		if !named {
			where = arg
			name = cliRegistry
			fetcher.Default = cliRegistry
			ref, err := registry.ParseReference(extra)
			if err == nil && ref.Registry != "" {
				fetcher.Registries[ref.Registry] = where
			}
		}

		if where == "" || strings.Count(name, "/") != 2 {
			return nil, fmt.Errorf("--registry %q: write URL, DIR or <host>/<owner>/<repo>=URL|DIR", arg)
		}

		fetcher.Registries[name] = where
	}

	return fetcher, nil
}

// propertyStart matches where the next "key=" of a --properties list starts.
var propertyStart = regexp.MustCompile(`^\s*[A-Za-z0-9_.-]+=`)

// splitProperties splits --properties values on the commas that start another key=value,
// so that values may be YAML flow collections with commas of their own
// ("tiers=[{name: web, max: 3}],image=busybox").
func splitProperties(values []string) []string {
	var pairs []string
	for _, value := range values {
		start := 0
		for i := 0; i < len(value); i++ {
			if value[i] == ',' && propertyStart.MatchString(value[i+1:]) {
				pairs = append(pairs, value[start:i])
				start = i + 1
			}
		}

		pairs = append(pairs, value[start:])
	}

	return pairs
}

// parseProperties parses --properties into plain data: values are YAML scalars or flow
// collections, dotted keys nest.
func parseProperties(values []string) (map[string]any, error) {
	props := map[string]any{}
	for _, pair := range splitProperties(values) {
		pair = strings.TrimSpace(pair)
		key, raw, found := strings.Cut(pair, "=")
		if !found || key == "" {
			return nil, fmt.Errorf("property %q is not of the form key=value", pair)
		}

		var value any = raw
		if raw != "" {
			err := yaml3.Unmarshal([]byte(raw), &value)
			if err != nil {
				value = raw
			}
		}

		parts := strings.Split(key, ".")
		m := props
		for _, part := range parts[:len(parts)-1] {
			child, ok := m[part].(map[string]any)
			if !ok {
				child = map[string]any{}
				m[part] = child
			}

			m = child
		}

		m[parts[len(parts)-1]] = value
	}

	return props, nil
}

// withProperties sets deployment-level properties in a config's top-level "properties",
// keeping the rest of the document (comments, order) as it was.
func withProperties(config []byte, pairs []string) ([]byte, error) {
	if len(pairs) == 0 {
		return config, nil
	}

	props, err := parseProperties(pairs)
	if err != nil {
		return nil, err
	}

	var doc yaml3.Node
	err = yaml3.Unmarshal(config, &doc)
	if err != nil {
		return nil, fmt.Errorf("the config is not valid YAML: %w", err)
	}

	if doc.Kind == 0 {
		doc = yaml3.Node{Kind: yaml3.DocumentNode, Content: []*yaml3.Node{{Kind: yaml3.MappingNode}}}
	}

	root := doc.Content[0]
	if root.Kind != yaml3.MappingNode {
		return nil, fmt.Errorf("the config is not a mapping: cannot set properties in it")
	}

	target := mappingValue(root, "properties")
	err = mergeNode(target, props)
	if err != nil {
		return nil, err
	}

	return yaml3.Marshal(&doc)
}

// withStrictUndefined sets strict_undefined: true at the top of a config, keeping the
// rest of the document as it was. The config says it, so that the daemon expands it the
// same way, now and when it expands it again (a rollback).
func withStrictUndefined(config []byte) ([]byte, error) {
	var doc yaml3.Node
	err := yaml3.Unmarshal(config, &doc)
	if err != nil {
		return nil, fmt.Errorf("the config is not valid YAML: %w", err)
	}

	if doc.Kind == 0 || len(doc.Content) == 0 || doc.Content[0].Kind != yaml3.MappingNode {
		return nil, fmt.Errorf("the config is not a mapping: cannot set strict_undefined in it")
	}

	err = mergeNode(doc.Content[0], map[string]any{"strict_undefined": true})
	if err != nil {
		return nil, err
	}

	return yaml3.Marshal(&doc)
}

// mappingValue returns the value of key in a mapping node, adding an empty mapping when
// the key is absent or not a mapping.
func mappingValue(m *yaml3.Node, key string) *yaml3.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			if m.Content[i+1].Kind != yaml3.MappingNode {
				m.Content[i+1] = &yaml3.Node{Kind: yaml3.MappingNode}
			}

			return m.Content[i+1]
		}
	}

	value := &yaml3.Node{Kind: yaml3.MappingNode}
	m.Content = append(m.Content, &yaml3.Node{Kind: yaml3.ScalarNode, Value: key}, value)
	return value
}

// mergeNode sets values in a mapping node, recursing into nested maps.
func mergeNode(m *yaml3.Node, values map[string]any) error {
	keys := make([]string, 0, len(values))
	for k := range values {
		keys = append(keys, k)
	}

	sort.Strings(keys)
	for _, k := range keys {
		nested, ok := values[k].(map[string]any)
		if ok {
			err := mergeNode(mappingValue(m, k), nested)
			if err != nil {
				return err
			}

			continue
		}

		var value yaml3.Node
		err := value.Encode(values[k])
		if err != nil {
			return err
		}

		replaced := false
		for i := 0; i+1 < len(m.Content); i += 2 {
			if m.Content[i].Value == k {
				m.Content[i+1] = &value
				replaced = true
			}
		}

		if !replaced {
			m.Content = append(m.Content, &yaml3.Node{Kind: yaml3.ScalarNode, Value: k}, &value)
		}
	}

	return nil
}

// localTemplate is a config read from disk with everything it needs.
type localTemplate struct {
	config    []byte
	imports   map[string][]byte
	expansion *templates.Expansion
}

// loadTemplate reads a config file, gathers the files next to it that it needs, sets
// --properties, and expands it locally for env, fetching the registry and URL templates it
// names, which are added to the imports (where the daemon looks for them, so that it never
// fetches).
func (a *app) loadTemplate(configPath string, flags *templateFlags, env templates.Env) (*localTemplate, error) {
	config, err := os.ReadFile(configPath)
	if err != nil {
		return nil, err
	}

	imports, err := templates.GatherImports(configPath)
	if err != nil {
		return nil, err
	}

	config, err = withProperties(config, flags.properties)
	if err != nil {
		return nil, err
	}

	if flags.strictUndefined {
		config, err = withStrictUndefined(config)
		if err != nil {
			return nil, err
		}
	}

	err = a.configureRegistries(flags)
	if err != nil {
		return nil, err
	}

	fetcher, err := flags.fetcher("")
	if err != nil {
		return nil, err
	}

	return a.expandLocally(config, imports, fetcher, env)
}

// configureRegistries adds the registries and the default registry of config.yml to flags.
func (a *app) configureRegistries(flags *templateFlags) error {
	c, err := a.loadConfig()
	if err != nil {
		return err
	}

	flags.configured = c.Registries
	flags.defaultRegistry = c.DefaultRegistry
	return nil
}

// expandLocally expands a config with the CLI's fetcher and embeds what it fetched. The
// expansion's warnings go to stderr, its errors list every problem (see main).
func (a *app) expandLocally(config []byte, imports map[string][]byte, fetcher *registry.Fetcher, env templates.Env) (*localTemplate, error) {
	ctx, cancel := context.WithTimeout(context.Background(), expandTimeout)
	defer cancel()

	// In a limited child process, as the daemon does: a hostile template in a registry costs
	// the child, not the user's machine. Fetches run here, with the CLI's fetcher.
	runner := &isolate.Runner{Budget: expandTimeout}
	exp, err := runner.Expand(ctx, config, imports, templates.Options{Env: env, Fetch: fetcher})
	var expandErr *templates.ExpandError
	if errors.As(err, &expandErr) {
		a.warn(expandErr.Warnings)
	}

	if err != nil {
		return nil, err
	}

	a.warn(exp.Warnings)
	for name, content := range exp.Fetched {
		imports[name] = content
	}

	return &localTemplate{config: config, imports: imports, expansion: exp}, nil
}

// warn prints an expansion's warnings to stderr, one per line.
func (a *app) warn(warnings []templates.Warning) {
	for _, w := range warnings {
		_, _ = fmt.Fprintf(a.stderr, "Warning: %s\n", w)
	}
}

// stringImports converts imports for the API, which carries them as text.
func stringImports(imports map[string][]byte) map[string]string {
	out := make(map[string]string, len(imports))
	for name, content := range imports {
		out[name] = string(content)
	}

	return out
}

func (a *app) expandCommand() *cobra.Command {
	var flags templateFlags
	var format, deployment string
	cmd := &cobra.Command{
		Use:   "expand <config.yaml>",
		Short: "Expand a templated config locally and print its expanded config and layout",
		Long: `Expand a templated config locally, as the daemon would, and print a document with its
expanded config (the shapes) and its layout (the tree of templates). Nothing is sent to a
daemon. Templates and schemas next to the config are found by themselves; registry and URL
templates are fetched (see --registry). A config that does not expand is an error.`,
		Args: exactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != formatYAML && format != formatJSON {
				return fmt.Errorf("format %q is not known: use yaml or json", format)
			}

			if deployment == "" {
				deployment = strings.TrimSuffix(filepath.Base(args[0]), filepath.Ext(args[0]))
			}

			local, err := a.loadTemplate(args[0], &flags, templates.Env{Deployment: deployment, Project: a.project})
			if err != nil {
				return err
			}

			return writeExpansion(a.stdout, local.expansion, format)
		},
	}

	flags.add(cmd)
	cmd.Flags().StringVarP(&format, "format", "f", formatYAML, "output format (yaml, json)")
	cmd.Flags().StringVar(&deployment, "deployment", "", "deployment name templates see as env['deployment'] (default: the config file's name without extension)")
	return cmd
}

// expansionDocument is what expand prints.
type expansionDocument struct {
	Config templates.Config `json:"config" yaml:"config"`
	Layout templates.Layout `json:"layout" yaml:"layout"`
}

func writeExpansion(w io.Writer, exp *templates.Expansion, format string) error {
	doc := expansionDocument{Config: exp.Config, Layout: exp.Layout}
	if doc.Config.Resources == nil {
		doc.Config.Resources = []templates.Resource{}
	}

	if doc.Layout.Resources == nil {
		doc.Layout.Resources = []templates.LayoutResource{}
	}

	if format == formatJSON {
		data, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return err
		}

		_, err = fmt.Fprintln(w, string(data))
		return err
	}

	return writeYAML(w, doc)
}

// writePlan prints what applying a config does.
func writePlan(w io.Writer, plan *api.DeploymentTemplatePlan) error {
	var b strings.Builder
	for _, c := range plan.Create {
		fmt.Fprintf(&b, "+ create shape %s\n", c.Name)
	}

	for _, u := range plan.Update {
		fmt.Fprintf(&b, "~ update shape %s\n", u.Name)
		for _, c := range u.Changes {
			fmt.Fprintf(&b, "    %s: %s -> %s\n", c.Field, planValue(c.Old), planValue(c.New))
		}
	}

	for _, d := range plan.Delete {
		if d.Instances > 0 {
			fmt.Fprintf(&b, "- delete shape %s (and its %d instances: needs --force)\n", d.Name, d.Instances)
		} else {
			fmt.Fprintf(&b, "- delete shape %s\n", d.Name)
		}
	}

	if len(plan.Create)+len(plan.Update)+len(plan.Delete) == 0 {
		b.WriteString("No shape changes\n")
	}

	if len(plan.Unchanged) > 0 {
		fmt.Fprintf(&b, "Unchanged: %s\n", strings.Join(plan.Unchanged, ", "))
	}

	if len(plan.Unmanaged) > 0 {
		fmt.Fprintf(&b, "Not made by a template (left alone): %s\n", strings.Join(plan.Unmanaged, ", "))
	}

	_, err := io.WriteString(w, b.String())
	return err
}

// planValue shows a value of a field change: JSON, or (unset).
func planValue(v any) string {
	if v == nil {
		return "(unset)"
	}

	data, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}

	return string(data)
}
