package templates

import (
	"fmt"
	"math"
	"math/big"

	"go.starlark.net/starlark"
)

// toStarlark converts plain data to Starlark values. Map keys are inserted in sorted order,
// so that iteration is the same on every run.
func toStarlark(v any) starlark.Value {
	switch t := v.(type) {
	case nil:
		return starlark.None
	case bool:
		return starlark.Bool(t)
	case int:
		return starlark.MakeInt(t)
	case float64:
		return starlark.Float(t)
	case string:
		return starlark.String(t)
	case []any:
		items := make([]starlark.Value, len(t))
		for i, item := range t {
			items[i] = toStarlark(item)
		}

		return starlark.NewList(items)
	case map[string]any:
		d := starlark.NewDict(len(t))
		for _, k := range sortedKeys(t) {
			_ = d.SetKey(starlark.String(k), toStarlark(t[k]))
		}

		return d
	case map[string]string:
		d := starlark.NewDict(len(t))
		for _, k := range sortedKeys(t) {
			_ = d.SetKey(starlark.String(k), starlark.String(t[k]))
		}

		return d
	}

	return starlark.String(fmt.Sprint(v))
}

// sizeBudget counts the approximate size of converted data, to cap a template's output
// when it returns a dict instead of YAML text.
type sizeBudget struct {
	left int
}

func (b *sizeBudget) take(n int) error {
	b.left -= n
	if b.left < 0 {
		return errTooLarge
	}

	return nil
}

var errTooLarge = fmt.Errorf("too large")

// maxDataDepth bounds how deeply returned data may nest: a list that contains itself
// would otherwise recurse until the stack overflows, which kills the process.
const maxDataDepth = 256

// fromStarlark converts a Starlark value to plain data; budget may be nil.
func fromStarlark(v starlark.Value, budget *sizeBudget) (any, error) {
	return fromStarlarkDepth(v, budget, 0)
}

func fromStarlarkDepth(v starlark.Value, budget *sizeBudget, depth int) (any, error) {
	if depth > maxDataDepth {
		return nil, fmt.Errorf("data nests more than %d levels deep: does a list or dict contain itself?", maxDataDepth)
	}

	cost := 8
	if s, ok := v.(starlark.String); ok {
		cost += len(s)
	}

	if budget != nil {
		err := budget.take(cost)
		if err != nil {
			return nil, err
		}
	}

	switch t := v.(type) {
	case starlark.NoneType:
		return nil, nil
	case starlark.Bool:
		return bool(t), nil
	case starlark.Int:
		i, ok := t.Int64()
		if ok && i >= math.MinInt && i <= math.MaxInt {
			return int(i), nil
		}

		f, _ := new(big.Float).SetInt(t.BigInt()).Float64()
		return f, nil
	case starlark.Float:
		return float64(t), nil
	case starlark.String:
		return string(t), nil
	case starlark.Indexable: // list, tuple
		out := make([]any, t.Len())
		for i := range out {
			item, err := fromStarlarkDepth(t.Index(i), budget, depth+1)
			if err != nil {
				return nil, err
			}

			out[i] = item
		}

		return out, nil
	case *starlark.Dict:
		out := make(map[string]any, t.Len())
		for _, item := range t.Items() {
			k, ok := item[0].(starlark.String)
			if !ok {
				return nil, fmt.Errorf("dict key %s is a %s: keys of returned data must be strings", item[0], item[0].Type())
			}

			value, err := fromStarlarkDepth(item[1], budget, depth+1)
			if err != nil {
				return nil, err
			}

			out[string(k)] = value
		}

		return out, nil
	}

	return nil, fmt.Errorf("a %s is not data: return dicts, lists, strings, numbers, booleans and None", v.Type())
}
