package templates

import (
	"context"
	"encoding/json"
	"fmt"
	osexec "os/exec"
	"strings"
	"testing"
)

// undefinedCases are Jinja2's default Undefined at work, each with what Jinja2 3.1
// renders (or "ERR " and its UndefinedError message). TestUndefinedAgainstJinja2 checks
// the expectations against Jinja2 itself where python3-jinja2 is installed.
var undefinedCases = []struct{ src, want string }{
	{"{{ x }}|", "|"},
	{"{{ d.cpu }}|", "|"},
	{"{{ d['cpu'] or '100m' }}", "100m"},
	{"{% set CPU = d['cpu'] or '100m' %}{{ CPU }}", "100m"},
	{"{% if d.debug %}y{% else %}n{% endif %}", "n"},
	{"{% if not d.debug %}off{% endif %}", "off"},
	{"{{ x.y }}", "ERR 'x' is undefined"},
	{"{{ d.a.b }}", "ERR 'dict object' has no attribute 'a'"},
	{"{{ d['a']['b'] }}", "ERR 'dict object' has no attribute 'a'"},
	{"{{ x() }}", "ERR 'x' is undefined"},
	{"{% for i in x %}a{% else %}empty{% endfor %}", "empty"},
	{"{% for i in d.ports %}a{% endfor %}.", "."},
	{"{{ l[5] }}|", "|"},
	{"{{ l[5].a }}", "ERR list object has no element 5"},
	{"{{ n.a }}|", "|"},
	{"{{ n.a.b }}", "ERR 'None' has no attribute 'a'"},
	{"{{ x + 1 }}", "ERR 'x' is undefined"},
	{"{{ 1 + d.z }}", "ERR 'dict object' has no attribute 'z'"},
	{"{{ x ~ 'a' }}", "a"},
	{"{{ x == y }}", "True"},
	{"{{ x == '' }}", "False"},
	{"{{ x != '' }}", "True"},
	{"{{ x is defined }}", "False"},
	{"{{ d.x is defined }}", "True"},
	{"{{ d.cpu is defined }}", "False"},
	{"{{ x is undefined }}", "True"},
	{"{{ n is defined }}", "True"},
	{"{{ x.y is defined }}", "ERR 'x' is undefined"},
	{"{{ x | default('z') }}", "z"},
	{"{{ d.cpu | default('z') }}", "z"},
	{"{{ (n | default('z')) is none }}", "True"},
	{"{{ '' | default('z', true) }}", "z"},
	{"{{ x | int }}", "ERR 'x' is undefined"},
	{"{{ x | length }}", "0"},
	{"{{ x | upper }}|", "|"},
	{"{{ -x }}", "ERR 'x' is undefined"},
	{"{{ x < 1 }}", "ERR 'x' is undefined"},
	{"{{ x is none }}", "False"},
	{"{{ 'a' in x }}", "False"},
	{"{{ x in l }}", "False"},
	{"{{ x | list }}", "[]"},
	{"{{ x[1:2] }}", "ERR 'x' is undefined"},
	{"{{ x.append(1) }}", "ERR 'x' is undefined"},
	{"{{ d.z.items() }}", "ERR 'dict object' has no attribute 'z'"},
	{"{% macro m(a, b) %}[{{ b }}]{% endmacro %}{{ m(1) }}", "[]"},
	{"{% macro m(a, b) %}[{{ b.c }}]{% endmacro %}{{ m(1) }}", "ERR parameter 'b' was not provided"},
	{"{% macro m(a) %}[{{ a.c }}]{% endmacro %}{{ m(d) }}", "[]"},
	{"{{ x | join(',') }}", ""},
	{"{{ not x }}", "True"},
	{"{{ x * 2 }}", "ERR 'x' is undefined"},
	{"{{ x | string }}|", "|"},
	{"{{ x | float }}", "ERR 'x' is undefined"},
	{"{{ x | abs }}", "ERR bad operand type for abs(): 'Undefined'"},
	{"{{ x | indent(2) }}", "ERR 'x' is undefined"},
	{"{{ x | trim }}|", "|"},
	{"{{ x | replace('a', 'b') }}|", "|"},
	{"{{ x | count }}", "0"},
	{"{{ x | sort }}", "[]"},
	{"{{ d.x }}", "1"},
	{"{{ l[1] }}", "2"},
	{"{{ s.upper() }}", "ABC"},
	{"{% set ns = namespace(v=1) %}{% set ns.v = 2 %}{{ ns.v }}", "2"},
	{"{% set l2 = [] %}{% do l2.append(1) %}{{ l2 }}", "[1]"},
	{"{{ x if x else 'no' }}", "no"},
	{"{{ d.get('x') }}", "1"},
	{"{% for k, v in d.items() %}{{ k }}={{ v }}{% endfor %}", "x=1"},
	{"{% for k, v in d.z.items() %}{% endfor %}", "ERR 'dict object' has no attribute 'z'"},
	{"{{ d.z | default({}) | length }}", "0"},
	{"{{ d.x is defined and d.x }}", "1"},
	{"{{ d.z is defined and d.z }}", "False"},
	{"{{ d['z'] | indent(4) }}", "ERR 'dict object' has no attribute 'z'"},
	{"{{ x | default(d.x) }}", "1"},
	{"{{ x ~ '-' ~ d.x }}", "-1"},
	{"{% set v = d.z %}{{ v is defined }}", "False"},
	{"{% set v = d.z %}{{ v.w }}", "ERR 'dict object' has no attribute 'z'"},
	{"{% if x %}a{% elif d.x %}b{% endif %}", "b"},
	{"{{ l | selectattr('z') | list }}", "[]"},
	{"{{ x.y is none }}", "ERR 'x' is undefined"},
	{"{{ d.z is none }}", "False"},
	{"{{ n is none }}", "True"},
	{"{{ d.x is divisibleby(1) }}", "True"},
	{"{{ 3 is gt(2) }}", "True"},
	{"{{ d.x is string }}", "False"},
}

func renderJinja(t *testing.T, src string, strict bool) (string, []Warning, error) {
	t.Helper()
	config := "resources:\n- {name: r, type: t.jinja}\n"
	opts := Options{StrictUndefined: strict}
	e, _, err := expand(context.Background(), []byte(config), map[string][]byte{"t.jinja": []byte("resources: []\n")}, opts)
	if err != nil {
		t.Fatal(err)
	}

	e.imports["case.jinja"] = []byte(src)
	globals := map[string]any{"d": map[string]any{"x": 1}, "l": []any{1, 2}, "n": nil, "s": "abc"}
	text, err := e.jinja.renderGlobals(context.Background(), &template{key: "case.jinja", lang: langJinja}, globals, where{})
	return text, e.warnings, err
}

func TestUndefinedSemantics(t *testing.T) {
	for _, c := range undefinedCases {
		got, _, err := renderJinja(t, c.src, false)
		if err != nil {
			got = "ERR " + err.Error()
			if i := strings.Index(got, "case.jinja:1: "); i >= 0 {
				got = "ERR " + got[i+len("case.jinja:1: "):]
			}
		}

		if got != c.want && !(strings.HasPrefix(c.want, "ERR ") && strings.HasPrefix(got, c.want+": ")) {
			t.Errorf("%s: got %q, want %q", c.src, got, c.want)
		}
	}
}

// jinja2Script renders each template of a JSON list with Jinja2's default Undefined and
// the globals renderJinja gives, printing what it rendered or "ERR " and the error.
const jinja2Script = `
import json, sys
import jinja2
env = jinja2.Environment(extensions=["jinja2.ext.do"])
out = []
for src in json.load(sys.stdin):
    try:
        out.append(env.from_string(src).render(d={"x": 1}, l=[1, 2], n=None, s="abc"))
    except Exception as e:
        out.append("ERR " + str(e))
json.dump(out, sys.stdout)
`

// TestUndefinedAgainstJinja2 checks the expectations of undefinedCases against Jinja2.
func TestUndefinedAgainstJinja2(t *testing.T) {
	python, err := osexec.LookPath("python3")
	if err == nil {
		err = osexec.Command(python, "-c", "import jinja2").Run()
	}

	if err != nil {
		t.Skipf("python3-jinja2 is not installed (apt-get install python3-jinja2 to compare with Jinja2): %v", err)
	}

	srcs := []string{}
	for _, c := range undefinedCases {
		srcs = append(srcs, c.src)
	}

	in, err := json.Marshal(srcs)
	if err != nil {
		t.Fatal(err)
	}

	cmd := osexec.Command(python, "-c", jinja2Script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}

	var got []string
	err = json.Unmarshal(out, &got)
	if err != nil {
		t.Fatal(err)
	}

	for i, c := range undefinedCases {
		if got[i] != c.want {
			t.Errorf("%s: Jinja2 renders %q, the case says %q", c.src, got[i], c.want)
		}
	}
}

// Macros of imported files and included files are rewritten too: their warnings and errors
// name the file and line.
func TestUndefinedInImportsAndIncludes(t *testing.T) {
	config := []byte("resources:\n- {name: r, type: t.jinja}\n")
	imports := map[string][]byte{
		"t.jinja":    []byte("{% import 'h.jinja' as h %}{% from 'h.jinja' import g %}resources: []\n# {{ h.f() }} {{ g(1) }}\n{% include 'i.jinja' %}\n"),
		"h.jinja":    []byte("{% macro f() %}{{ missing }}{% endmacro %}\n{% macro g(a, b) %}{{ b }}{% endmacro %}\n"),
		"i.jinja":    []byte("# {{ properties.none }}\n"),
		"bad.jinja":  []byte("{% import 'hbad.jinja' as h %}resources: []\n# {{ h.f() }}\n"),
		"hbad.jinja": []byte("\n{% macro f() %}{{ properties.a.b }}{% endmacro %}\n"),
	}

	exp, err := Expand(context.Background(), config, imports, Options{})
	if err != nil {
		t.Fatal(err)
	}

	got := []string{}
	for _, w := range exp.Warnings {
		got = append(got, fmt.Sprintf("%s:%d %s", w.File, w.Line, strings.SplitN(w.Message, " ", 2)[0]))
	}

	want := []string{"h.jinja:1 missing", "h.jinja:2 b", "i.jinja:1 properties.none"}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("warnings: %v, want %v", got, want)
	}

	_, err = Expand(context.Background(), []byte("resources:\n- {name: r, type: bad.jinja}\n"), imports, Options{})
	if err == nil || !strings.Contains(err.Error(), "hbad.jinja:2: 'dict object' has no attribute 'a'") {
		t.Errorf("error in an imported macro: %v", err)
	}
}

// A warning names where the value is printed and, when elsewhere, where it came from.
func TestUndefinedWarningOrigin(t *testing.T) {
	out, warnings, err := renderJinja(t, "{% set v = d.z %}\n[{{ v }}]", false)
	if err != nil || out != "\n[]" || len(warnings) != 1 || warnings[0].Line != 2 ||
		!strings.HasPrefix(warnings[0].Message, "d.z is undefined ('dict object' has no attribute 'z') since case.jinja:1, rendered as empty text") {
		t.Fatalf("got %q, %+v, %v", out, warnings, err)
	}
}
