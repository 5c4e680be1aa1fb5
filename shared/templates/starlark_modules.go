package templates

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	starlarkmath "go.starlark.net/lib/math"
	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.yaml.in/yaml/v3"
)

// The modules a Python template may import without shipping them: yaml and json (both
// also predeclared, as Deployment Manager templates use them after "import yaml") and math.
var builtinModules = map[string]*starlarkstruct.Module{
	"yaml": {Name: "yaml", Members: starlark.StringDict{
		"dump":      starlark.NewBuiltin("yaml.dump", yamlDump),
		"safe_dump": starlark.NewBuiltin("yaml.safe_dump", yamlDump),
		"load":      starlark.NewBuiltin("yaml.load", yamlLoad),
		"safe_load": starlark.NewBuiltin("yaml.safe_load", yamlLoad),
	}},
	"json": {Name: "json", Members: starlark.StringDict{
		"dumps":  starlark.NewBuiltin("json.dumps", jsonDumps),
		"loads":  starlark.NewBuiltin("json.loads", jsonLoads),
		"encode": starlark.NewBuiltin("json.encode", jsonDumps),
		"decode": starlark.NewBuiltin("json.decode", jsonLoads),
	}},
	"math": starlarkmath.Module,
}

// starlarkBuiltins are predeclared in every template and helper module.
var starlarkBuiltins = starlark.StringDict{
	"yaml":       builtinModules["yaml"],
	"json":       builtinModules["json"],
	"isinstance": starlark.NewBuiltin("isinstance", isinstance),
}

// yamlDump is yaml.dump(data, **options): options (default_flow_style, indent...) are
// accepted and ignored; keys are sorted, as PyYAML does by default.
func yamlDump(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("%s: missing data to dump", b.Name())
	}

	data, err := fromStarlark(args[0], nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}

	out, err := yaml.Marshal(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}

	return starlark.String(out), nil
}

func yamlLoad(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	var s string
	if len(args) < 1 {
		return nil, fmt.Errorf("%s: missing YAML text", b.Name())
	}

	s, ok := starlark.AsString(args[0])
	if !ok {
		return nil, fmt.Errorf("%s: got %s, want a string", b.Name(), args[0].Type())
	}

	data, err := parseYAML([]byte(s))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}

	return toStarlark(data), nil
}

// jsonDumps is json.dumps(data, indent=None, sort_keys=...): keys are always sorted.
func jsonDumps(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("%s: missing data to dump", b.Name())
	}

	data, err := fromStarlark(args[0], nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}

	indent := 0
	for _, kv := range kwargs {
		if string(kv[0].(starlark.String)) == "indent" && kv[1] != starlark.None {
			err := starlark.AsInt(kv[1], &indent)
			if err != nil {
				return nil, fmt.Errorf("%s: indent: %w", b.Name(), err)
			}
		}
	}

	var out []byte
	if indent > 0 {
		out, err = json.MarshalIndent(data, "", strings.Repeat(" ", min(indent, 16)))
	} else {
		out, err = json.Marshal(data)
	}

	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}

	return starlark.String(out), nil
}

func jsonLoads(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, _ []starlark.Tuple) (starlark.Value, error) {
	if len(args) < 1 {
		return nil, fmt.Errorf("%s: missing JSON text", b.Name())
	}

	s, ok := starlark.AsString(args[0])
	if !ok {
		return nil, fmt.Errorf("%s: got %s, want a string", b.Name(), args[0].Type())
	}

	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.UseNumber()
	var data any
	err := dec.Decode(&data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", b.Name(), err)
	}

	return toStarlark(jsonNumbers(data)), nil
}

// jsonNumbers turns json.Number into int or float64, as Python's json.loads does.
func jsonNumbers(v any) any {
	switch t := v.(type) {
	case json.Number:
		i, err := t.Int64()
		if err == nil {
			return int(i)
		}

		f, _ := t.Float64()
		return f
	case map[string]any:
		for k, item := range t {
			t[k] = jsonNumbers(item)
		}
	case []any:
		for i, item := range t {
			t[i] = jsonNumbers(item)
		}
	}

	return v
}

// pythonTypes maps Python's type names, as isinstance receives them, to Starlark's.
var pythonTypes = map[string]string{"str": "string", "int": "int", "float": "float", "bool": "bool", "list": "list", "dict": "dict", "tuple": "tuple"}

// isinstance(x, T) or isinstance(x, (T1, T2)), for T among str, int, float, bool, list,
// dict and tuple: Starlark has no isinstance, Python templates use it.
func isinstance(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var x, classinfo starlark.Value
	err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &x, &classinfo)
	if err != nil {
		return nil, err
	}

	classes := []starlark.Value{classinfo}
	tuple, ok := classinfo.(starlark.Tuple)
	if ok {
		classes = tuple
	}

	for _, c := range classes {
		fn, ok := c.(*starlark.Builtin)
		want := ""
		if ok {
			want = pythonTypes[fn.Name()]
		}

		if want == "" {
			return nil, fmt.Errorf("isinstance: %s is not one of str, int, float, bool, list, dict, tuple", c)
		}

		if x.Type() == want || (want == "int" && x.Type() == "bool") {
			return starlark.True, nil
		}
	}

	return starlark.False, nil
}
