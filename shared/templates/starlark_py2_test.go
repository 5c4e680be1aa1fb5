package templates

import (
	"context"
	"strings"
	"testing"
)

// runPython expands one Python template and returns the description of the shape it makes,
// or the error.
func runPython(t *testing.T, body string) (string, error) {
	t.Helper()
	src := "def GenerateConfig(context):\n" + body + "  return {'resources': [{'name': 'x', 'type': 'shape', 'properties': {'description': str(out)}}]}\n"
	exp, err := Expand(context.Background(), []byte("resources: [{name: t, type: t.py, properties: {m: {a: 1, b: 2}}}]"), map[string][]byte{"t.py": []byte(src)}, Options{})
	if err != nil {
		return "", err
	}

	return exp.Config.Resources[0].Properties["description"].(string), nil
}

func TestPython2Idioms(t *testing.T) {
	tests := []struct{ body, want string }{
		{"  out = sorted(context.properties['m'].iteritems())\n", `[("a", 1), ("b", 2)]`},
		{"  out = sorted(context.properties['m'].itervalues()) + sorted(context.properties['m'].iterkeys())\n", `[1, 2, "a", "b"]`},
		{"  m = context.properties['m']\n  out = [m.has_key('a'), m.has_key('z'), {}.has_key(1)]\n", `[True, False, False]`},
		{"  out = [i for i in xrange(3)] + [isinstance('s', basestring), isinstance(u'x', unicode), long('7')]\n", `[0, 1, 2, True, True, 7]`},
		{"  d = {'a]': 1, 'b': {'c': 2}}\n  del d['a]']  # a comment\n  del d['b']['c']\n  out = d\n", `{"b": {}}`},
		{"  l = [1, 2, 3]\n  del l[0]\n  del  l[-1]\n  out = l\n", `[2]`},
		{"  x = None\n  out = [x is None, x is not None]\n", `[True, False]`},
	}

	for _, tt := range tests {
		got, err := runPython(t, tt.body)
		if err != nil || got != tt.want {
			t.Errorf("%s: got %q, %v; want %q", tt.body, got, err, tt.want)
		}
	}

	failures := []struct{ body, want string }{
		{"  d = {}\n  del d['missing']\n  out = d\n", `t.py:3:8: pop: missing key`},
		{"  d, e = {'a': 1}, {'b': 2}\n  del d['a'], e['b']\n  out = d\n", `t.py:3: del d['a'], e['b']: write one del statement per target`},
		{"  l = [1, 2, 3]\n  del l[0:2]\n  out = l\n", `t.py:3: del l[0:2]: del of a slice is not supported`},
		{"  out = [1].has_key(1)\n", `has_key is a method of dicts`},
		{"  try:\n    out = 1\n  except KeyError:\n    out = 2\n", `t.py:2: try/except is not available in Starlark`},
		{"  def walk(n):\n    return [walk(c) for c in n]\n  out = walk([])\n", `t.py:3: function walk calls itself`},
		{"  def f(n):\n    g = lambda: f(n)\n    return g()\n  out = f(1)\n", `t.py:3:9: function f called recursively`}, // At run time.
		{"  def even(n):\n    return n == 0 or odd(n - 1)\n  def odd(n):\n    return n != 0 and even(n - 1)\n  out = even(2)\n", `t.py:5: functions even -> odd -> even call each other`},
	}

	for _, tt := range failures {
		_, err := runPython(t, tt.body)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: got %v; want an error with %q", tt.body, err, tt.want)
		}
	}
}
