package templates

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// Config is an expanded config (Deployment Manager's expandedConfig): primitive resources
// only, references resolved, in expansion order.
type Config struct {
	Resources []Resource `json:"resources" yaml:"resources"`
}

// Resource is one resource: a name unique in its config or template, a type, and
// properties. In an expanded config every resource is a primitive.
type Resource struct {
	// Name of the resource
	// Example: web
	Name string `json:"name" yaml:"name"`

	// Type of the resource: "shape", another primitive, or a template
	// Example: shape
	Type string `json:"type" yaml:"type"`

	// Properties of the resource, plain data (maps, lists, strings, numbers, booleans)
	Properties map[string]any `json:"properties,omitempty" yaml:"properties,omitempty"`
}

// input is a config, or the output of a template, before expansion.
type input struct {
	imports    []registry.Import
	properties map[string]any
	defaults   map[string]map[string]any
	resources  []Resource

	// strictUndefined is the config's strict_undefined: Jinja's StrictUndefined instead of
	// Jinja2's default Undefined (strictSet: the key is there at all).
	strictUndefined bool
	strictSet       bool
}

// inputKeys are the top-level keys a config or a template's output may have.
var inputKeys = map[string]bool{"imports": true, "properties": true, "defaults": true, "resources": true, "strict_undefined": true}

// resourceKeys are the keys a resource may have.
var resourceKeys = map[string]bool{"name": true, "type": true, "properties": true}

// parseYAML decodes YAML into plain data (map[string]any, []any and scalars).
func parseYAML(data []byte) (any, error) {
	var doc any
	err := yaml.Unmarshal(data, &doc)
	if err != nil {
		return nil, err
	}

	return normalize(doc)
}

// parseInput reads a config or a template's output from decoded data. what names it in
// errors ("the config", "the output of the template").
func parseInput(doc any, w where, what string) (*input, error) {
	in := &input{}
	if doc == nil {
		return in, nil // An empty template output is an empty config.
	}

	top, ok := doc.(map[string]any)
	if !ok {
		return nil, w.errorf("%s must be a mapping with resources (and optionally imports, properties, defaults), got %s", what, typeName(doc))
	}

	for _, key := range sortedKeys(top) {
		if !inputKeys[key] {
			return nil, w.errorf("%s has unknown key %q: use imports, properties, defaults, resources and strict_undefined", what, key)
		}
	}

	var err error
	in.imports, err = parseImports(top["imports"], w, what)
	if err != nil {
		return nil, err
	}

	in.properties, err = asMap(top["properties"], w, what+": properties")
	if err != nil {
		return nil, err
	}

	in.defaults, err = parseDefaults(top["defaults"], w, what)
	if err != nil {
		return nil, err
	}

	in.resources, err = parseResources(top["resources"], w, what)
	if err != nil {
		return nil, err
	}

	// "resources:" with nothing under it (YAML null) is no resources, as in Deployment
	// Manager; no resources key at all stays an error (see finish).
	resources, has := top["resources"]
	if has && resources == nil {
		in.resources = []Resource{}
	}

	strict, has := top["strict_undefined"]
	if has {
		in.strictSet = true
		in.strictUndefined, ok = strict.(bool)
		if !ok {
			return nil, w.errorf("%s: strict_undefined must be true or false, got %s", what, typeName(strict))
		}
	}

	return in, nil
}

// parseImports reads an imports list. An item is {path: FILE[, name: NAME]} or, as in
// Deployment Manager's own test configs and early docs, the plain string FILE, the same as
// {path: FILE}; both forms may be mixed.
func parseImports(v any, w where, what string) ([]registry.Import, error) {
	if v == nil {
		return nil, nil
	}

	list, ok := v.([]any)
	if !ok {
		return nil, w.errorf("%s: imports must be a list of FILE or {path: FILE, name: NAME}, got %s", what, typeName(v))
	}

	imports := []registry.Import{}
	for i, item := range list {
		plain, isString := item.(string)
		if isString && plain != "" {
			imports = append(imports, registry.Import{Path: plain})
			continue
		}

		m, ok := item.(map[string]any)
		path, _ := m["path"].(string)
		name, nameOK := m["name"].(string)
		if !ok || path == "" || (m["name"] != nil && !nameOK) || len(m) > 2 || (len(m) == 2 && m["name"] == nil) {
			return nil, w.errorf("%s: imports[%d] must be FILE, {path: FILE} or {path: FILE, name: NAME}", what, i)
		}

		imports = append(imports, registry.Import{Path: path, Name: name})
	}

	return imports, nil
}

func parseDefaults(v any, w where, what string) (map[string]map[string]any, error) {
	m, err := asMap(v, w, what+": defaults")
	if err != nil || m == nil {
		return nil, err
	}

	defaults := map[string]map[string]any{}
	for typ, props := range m {
		p, ok := props.(map[string]any)
		if !ok {
			return nil, w.errorf("%s: defaults[%q] must be a mapping of properties, got %s", what, typ, typeName(props))
		}

		defaults[typ] = p
	}

	return defaults, nil
}

// parseResources reads the resources list and refuses duplicate names: a name must be
// unique within its config or template, as in Deployment Manager.
func parseResources(v any, w where, what string) ([]Resource, error) {
	if v == nil {
		return nil, nil
	}

	list, ok := v.([]any)
	if !ok {
		return nil, w.errorf("%s: resources must be a list, got %s", what, typeName(v))
	}

	resources := make([]Resource, 0, len(list))
	seen := make(map[string]int, len(list))
	for i, item := range list {
		m, ok := item.(map[string]any)
		if !ok {
			return nil, w.errorf("%s: resources[%d] must be a mapping with name, type and properties, got %s", what, i, typeName(item))
		}

		for key := range m {
			if !resourceKeys[key] {
				return nil, w.errorf("%s: resources[%d] has unknown key %q: a resource has name, type and properties", what, i, key)
			}
		}

		name, _ := m["name"].(string)
		typ, _ := m["type"].(string)
		if name == "" || typ == "" {
			return nil, w.errorf("%s: resources[%d] needs a name and a type, both strings", what, i)
		}

		props, err := asMap(m["properties"], w, fmt.Sprintf("%s: resource %q: properties", what, name))
		if err != nil {
			return nil, err
		}

		first, dup := seen[name]
		if dup {
			return nil, w.errorf("%s: resource name %q is used twice (resources[%d] and resources[%d]): names must be unique within a config or template", what, name, first, i)
		}

		seen[name] = i
		resources = append(resources, Resource{Name: name, Type: typ, Properties: props})
	}

	return resources, nil
}

func asMap(v any, w where, what string) (map[string]any, error) {
	if v == nil {
		return nil, nil
	}

	m, ok := v.(map[string]any)
	if !ok {
		return nil, w.errorf("%s must be a mapping, got %s", what, typeName(v))
	}

	return m, nil
}

// normalize turns decoded YAML into plain data: string-keyed maps, []any, and string,
// bool, int, float64 or nil scalars.
func normalize(v any) (any, error) {
	switch t := v.(type) {
	case nil, string, bool, int, float64:
		return v, nil
	case map[string]any:
		for k, item := range t {
			n, err := normalize(item)
			if err != nil {
				return nil, err
			}

			t[k] = n
		}

		return t, nil
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, item := range t {
			n, err := normalize(item)
			if err != nil {
				return nil, err
			}

			m[fmt.Sprint(k)] = n
		}

		return m, nil
	case []any:
		for i, item := range t {
			n, err := normalize(item)
			if err != nil {
				return nil, err
			}

			t[i] = n
		}

		return t, nil
	case int64:
		return int(t), nil
	case uint64:
		if t > math.MaxInt64 {
			return float64(t), nil
		}

		return int(t), nil
	case time.Time:
		return t.Format(time.RFC3339Nano), nil
	}

	return nil, fmt.Errorf("value of type %T is not plain data", v)
}

// typeName names a plain data value's type the way YAML users know them.
func typeName(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case int, float64:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}

	return fmt.Sprintf("%T", v)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}

	sort.Strings(keys)
	return keys
}

// deepCopy copies plain data, so that a template cannot change what another one sees.
func deepCopy(v any) any {
	switch t := v.(type) {
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, item := range t {
			m[k] = deepCopy(item)
		}

		return m
	case []any:
		l := make([]any, len(t))
		for i, item := range t {
			l[i] = deepCopy(item)
		}

		return l
	}

	return v
}

// mergeInto merges src over dst (src wins), recursively for mappings, and returns dst.
func mergeInto(dst map[string]any, src map[string]any) map[string]any {
	if dst == nil {
		dst = map[string]any{}
	}

	for k, v := range src {
		sm, srcIsMap := v.(map[string]any)
		dm, dstIsMap := dst[k].(map[string]any)
		if srcIsMap && dstIsMap {
			dst[k] = mergeInto(dm, sm)
			continue
		}

		dst[k] = deepCopy(v)
	}

	return dst
}

// joinPath joins a resource path ("app" + "web" = "app/web").
func joinPath(parent string, name string) string {
	if parent == "" {
		return name
	}

	return parent + "/" + name
}

// dottedPath joins a property path ("config" + "limits.cpu").
func dottedPath(parts []string) string {
	return strings.Join(parts, ".")
}
