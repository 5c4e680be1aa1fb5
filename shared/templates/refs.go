package templates

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// referencePattern matches "$(ref.NAME.PATH)" (seed 000) and "$(properties.PATH)" (a
// deployment-level value, in the config only).
var referencePattern = regexp.MustCompile(`\$\((ref|properties)\.([^()\s]+)\)`)

// lookupFunc resolves one reference: kind is "ref" or "properties", expr what follows.
// It returns handled=false to leave the reference as it is.
type lookupFunc func(kind string, expr string, at []string) (value any, handled bool, err error)

// substitute replaces references in v: a string that is one whole reference takes the
// referenced value with its type; references inside a longer string are formatted into it.
func substitute(v any, at []string, lookup lookupFunc) (any, error) {
	switch t := v.(type) {
	case string:
		return substituteString(t, at, lookup)
	case map[string]any:
		for _, k := range sortedKeys(t) {
			n, err := substitute(t[k], append(at, k), lookup)
			if err != nil {
				return nil, err
			}

			t[k] = n
		}
	case []any:
		for i, item := range t {
			n, err := substitute(item, append(at, strconv.Itoa(i)), lookup)
			if err != nil {
				return nil, err
			}

			t[i] = n
		}
	}

	return v, nil
}

func substituteString(s string, at []string, lookup lookupFunc) (any, error) {
	if !strings.Contains(s, "$(") {
		return s, nil
	}

	m := referencePattern.FindStringSubmatchIndex(s)
	if m != nil && m[0] == 0 && m[1] == len(s) {
		v, handled, err := lookup(s[m[2]:m[3]], s[m[4]:m[5]], at)
		if err != nil || !handled {
			return s, err
		}

		return deepCopy(v), nil
	}

	var failed error
	out := referencePattern.ReplaceAllStringFunc(s, func(ref string) string {
		sub := referencePattern.FindStringSubmatch(ref)
		v, handled, err := lookup(sub[1], sub[2], at)
		if err != nil && failed == nil {
			failed = err
		}

		if err != nil || !handled {
			return ref
		}

		return formatValue(v)
	})

	return out, failed
}

// formatValue writes a value into a string: scalars as YAML would, others as JSON.
func formatValue(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case nil:
		return "null"
	case bool, int:
		return fmt.Sprint(t)
	case float64:
		return strconv.FormatFloat(t, 'g', -1, 64)
	}

	data, _ := json.Marshal(v)
	return string(data)
}

// lookupPath follows a dotted path into plain data. A map key may itself contain dots (LXD
// config keys such as limits.cpu), so the longest key matching the path wins; list items
// are numbered from 0, written ".0" or "[0]".
func lookupPath(v any, path string) (any, bool) {
	if path == "" {
		return v, true
	}

	switch t := v.(type) {
	case map[string]any:
		for end := len(path); end > 0; end = strings.LastIndex(path[:end], ".") {
			item, ok := t[path[:end]]
			if ok {
				rest := strings.TrimPrefix(path[end:], ".")
				found, ok := lookupPath(item, rest)
				if ok {
					return found, true
				}
			}
		}
	case []any:
		head, rest, _ := strings.Cut(path, ".")
		i, err := strconv.Atoi(head)
		if err == nil && i >= 0 && i < len(t) {
			return lookupPath(t[i], rest)
		}
	}

	return nil, false
}

// normalizePath turns "a[0].b" into "a.0.b".
func normalizePath(path string) string {
	return strings.NewReplacer("[", ".", "]", "").Replace(path)
}

// substituteProperties replaces $(properties.PATH) in the config's resources and defaults
// by the config's deployment-level properties, before expansion, so that templates get
// concrete values.
func substituteProperties(in *input) error {
	lookup := func(kind string, expr string, at []string) (any, bool, error) {
		if kind != "properties" {
			return nil, false, nil // $(ref...) is resolved after expansion.
		}

		v, ok := lookupPath(in.properties, normalizePath(expr))
		if !ok {
			return nil, false, fmt.Errorf("reference $(properties.%s): the config's properties have no %s", expr, expr)
		}

		return v, true, nil
	}

	for _, r := range in.resources {
		_, err := substitute(r.Properties, nil, lookup)
		if err != nil {
			return &ExpandError{Resource: r.Name, Msg: err.Error()}
		}
	}

	for _, typ := range sortedKeys(in.defaults) {
		_, err := substitute(in.defaults[typ], nil, lookup)
		if err != nil {
			return &ExpandError{Msg: fmt.Sprintf("defaults for %s: %v", typ, err)}
		}
	}

	return nil
}

// resolveReferences resolves $(ref.NAME.PATH) in the expanded resources against each
// other's properties, in an order where every resource comes after those it references,
// and returns that order and the dependencies.
func resolveReferences(resources []Resource, paths map[string]string) ([]string, map[string][]string, error) {
	byName := make(map[string]int, len(resources))
	for i, r := range resources {
		byName[r.Name] = i
	}

	// First pass: who references whom (and unknown names).
	deps := map[string][]string{}
	for _, r := range resources {
		seen := map[string]bool{}
		lookup := func(kind string, expr string, at []string) (any, bool, error) {
			name, _, err := splitReference(kind, expr, byName)
			if err != nil {
				return nil, false, &ExpandError{Resource: paths[r.Name], Path: dottedPath(at), Msg: err.Error()}
			}

			if !seen[name] {
				seen[name] = true
				deps[r.Name] = append(deps[r.Name], name)
			}

			return nil, false, nil
		}

		_, err := substitute(r.Properties, nil, lookup)
		if err != nil {
			return nil, nil, err
		}

		sort.Strings(deps[r.Name])
	}

	order, err := topoOrder(resources, deps, paths)
	if err != nil {
		return nil, nil, err
	}

	// Second pass: resolve in order, so a referenced resource's own references are done.
	for _, name := range order {
		r := resources[byName[name]]
		if len(deps[name]) == 0 {
			continue
		}

		lookup := func(kind string, expr string, at []string) (any, bool, error) {
			target, path, _ := splitReference(kind, expr, byName)
			v, ok := lookupPath(resources[byName[target]].Properties, path)
			if !ok {
				return nil, false, &ExpandError{Resource: paths[name], Path: dottedPath(at), Msg: fmt.Sprintf("reference $(ref.%s): resource %q has no property %s", expr, target, path)}
			}

			return v, true, nil
		}

		props, err := substitute(r.Properties, nil, lookup)
		if err != nil {
			return nil, nil, err
		}

		resources[byName[name]].Properties, _ = props.(map[string]any)
	}

	if len(deps) == 0 {
		deps = nil
	}

	return order, deps, nil
}

// splitReference splits "NAME.PATH" at the longest NAME that is a resource (names may
// contain dots too).
func splitReference(kind string, expr string, byName map[string]int) (string, string, error) {
	if kind != "ref" {
		return "", "", fmt.Errorf("$(%s.%s) is only allowed in the config itself: pass the value to the template as a property", kind, expr)
	}

	expr = normalizePath(expr)
	for end := len(expr); end > 0; end = strings.LastIndex(expr[:end], ".") {
		_, ok := byName[expr[:end]]
		if ok {
			path := strings.TrimPrefix(expr[end:], ".")
			if path == "" {
				return "", "", fmt.Errorf("reference $(ref.%s) names no property: write $(ref.NAME.PATH), e.g. $(ref.%s.config)", expr, expr)
			}

			return expr[:end], path, nil
		}
	}

	name, _, _ := strings.Cut(expr, ".")
	return "", "", fmt.Errorf("reference $(ref.%s): there is no expanded resource named %q", expr, name)
}

// topoOrder orders resources so that dependencies come first, keeping expansion order
// otherwise; a cycle is an error that names it.
func topoOrder(resources []Resource, deps map[string][]string, paths map[string]string) ([]string, error) {
	const (
		unvisited = iota
		visiting
		done
	)

	state := make(map[string]int, len(resources))
	order := make([]string, 0, len(resources))
	stack := []string{}
	var visit func(name string) error
	visit = func(name string) error {
		switch state[name] {
		case done:
			return nil
		case visiting:
			i := len(stack) - 1
			for stack[i] != name {
				i--
			}

			cycle := append(append([]string{}, stack[i:]...), name)
			return &ExpandError{Resource: paths[name], Msg: fmt.Sprintf("reference cycle %s: resources must not reference each other in a loop", strings.Join(cycle, " -> "))}
		}

		state[name] = visiting
		stack = append(stack, name)
		for _, d := range deps[name] {
			err := visit(d)
			if err != nil {
				return err
			}
		}

		stack = stack[:len(stack)-1]
		state[name] = done
		order = append(order, name)
		return nil
	}

	for _, r := range resources {
		err := visit(r.Name)
		if err != nil {
			return nil, err
		}
	}

	return order, nil
}
