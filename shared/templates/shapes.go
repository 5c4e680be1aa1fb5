package templates

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// ShapeType is the primitive type a deployment applies: its properties are a
// DeploymentShapePut.
const ShapeType = "shape"

// Shapes turns an expansion into the shapes to apply to a deployment, and the order to
// create them in (every shape after those it references). Expansion passes any primitive
// through, so that Deployment Manager configs expand; applying refuses every primitive
// that is not a shape, naming them. Each shape's properties must decode exactly (no
// unknown field, no wrong type) and pass shared/validate.
func Shapes(exp *Expansion) (map[string]api.DeploymentShapePut, []string, error) {
	others := []string{}
	for _, r := range exp.Config.Resources {
		if r.Type != ShapeType {
			others = append(others, fmt.Sprintf("%s (%s)", r.Name, r.Type))
		}
	}

	if len(others) > 0 {
		return nil, nil, &ExpandError{Msg: fmt.Sprintf("a deployment applies only resources of type %q, and the config expands to other types too: %s", ShapeType, strings.Join(others, ", "))}
	}

	byName := make(map[string]Resource, len(exp.Config.Resources))
	for _, r := range exp.Config.Resources {
		byName[r.Name] = r
	}

	shapes := make(map[string]api.DeploymentShapePut, len(byName))
	for _, name := range exp.Order {
		r := byName[name]
		err := validate.Name("shape", name)
		if err != nil {
			return nil, nil, &ExpandError{Resource: name, Msg: err.Error()}
		}

		put, path, err := decodeShape(r.Properties)
		if err != nil {
			return nil, nil, &ExpandError{Resource: name, Path: path, Msg: err.Error()}
		}

		err = validate.Shape(put)
		if err != nil {
			return nil, nil, &ExpandError{Resource: name, Msg: err.Error()}
		}

		shapes[name] = put
	}

	return shapes, exp.Order, nil
}

// decodeShape decodes a shape's properties strictly: an unknown key is an error (a
// misspelt key would otherwise vanish), and scalars given where LXD wants strings (config
// values such as limits.cpu: 2) become strings, as they would in LXD's own YAML.
func decodeShape(props map[string]any) (api.DeploymentShapePut, string, error) {
	put := api.DeploymentShapePut{}
	v, path, err := coerce(props, reflect.TypeFor[api.DeploymentShapePut](), nil)
	if err != nil {
		return put, path, err
	}

	data, err := json.Marshal(v)
	if err != nil {
		return put, "", err
	}

	err = json.Unmarshal(data, &put)
	if err != nil {
		return put, "", fmt.Errorf("is not a shape: %v", err)
	}

	return put, "", nil
}

// coerce checks plain data against the JSON shape of Go type t, and turns scalars into
// strings where t wants strings. It returns the path of the first problem.
func coerce(v any, t reflect.Type, at []string) (any, string, error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}

	if v == nil {
		return nil, "", nil
	}

	fail := func(want string) (any, string, error) {
		return nil, dottedPath(at), fmt.Errorf("got %s, want %s", typeName(v), want)
	}

	switch t.Kind() {
	case reflect.String:
		switch s := v.(type) {
		case string:
			return s, "", nil
		case bool, int:
			return fmt.Sprint(s), "", nil
		case float64:
			return strconv.FormatFloat(s, 'g', -1, 64), "", nil
		}

		return fail("a string")
	case reflect.Bool:
		_, ok := v.(bool)
		if !ok {
			return fail("a boolean")
		}
	case reflect.Int, reflect.Int64, reflect.Int32, reflect.Uint64, reflect.Uint32, reflect.Uint, reflect.Float64:
		_, isInt := v.(int)
		f, isFloat := v.(float64)
		if !isInt && !(isFloat && (t.Kind() == reflect.Float64 || f == float64(int64(f)))) {
			return fail("a number")
		}
	case reflect.Slice:
		list, ok := v.([]any)
		if !ok {
			return fail("a list")
		}

		out := make([]any, len(list))
		for i, item := range list {
			c, path, err := coerce(item, t.Elem(), append(at, strconv.Itoa(i)))
			if err != nil {
				return nil, path, err
			}

			out[i] = c
		}

		return out, "", nil
	case reflect.Map:
		m, ok := v.(map[string]any)
		if !ok {
			return fail("a mapping")
		}

		out := make(map[string]any, len(m))
		for _, k := range sortedKeys(m) {
			c, path, err := coerce(m[k], t.Elem(), append(at, k))
			if err != nil {
				return nil, path, err
			}

			out[k] = c
		}

		return out, "", nil
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			return fail("a mapping")
		}

		fields := jsonFields(t)
		out := make(map[string]any, len(m))
		for _, k := range sortedKeys(m) {
			ft, known := fields[k]
			if !known {
				names := sortedKeys(fields)
				sort.Strings(names)
				return nil, dottedPath(append(at, k)), fmt.Errorf("is not a field of %s: use one of %s", fieldOwner(at), strings.Join(names, ", "))
			}

			c, path, err := coerce(m[k], ft, append(at, k))
			if err != nil {
				return nil, path, err
			}

			out[k] = c
		}

		return out, "", nil
	}

	return v, "", nil
}

func fieldOwner(at []string) string {
	if len(at) == 0 {
		return "a shape"
	}

	return dottedPath(at)
}

// jsonFields maps the JSON names of a struct's fields (embedded structs flattened, as
// encoding/json does) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}

		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if name == "-" {
			continue
		}

		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				fields[k] = v
			}

			continue
		}

		if name == "" {
			name = f.Name
		}

		fields[name] = f.Type
	}

	return fields
}
