package templates

import (
	"fmt"
	"regexp"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
)

// The Python 2 compatibility layer. Deployment Manager ran its Python templates with
// Python 2.7, and real templates use its dict idioms; Starlark, which runs them here, is
// Python 3 flavoured. So, in every .py and .star file:
//
//   - d.iteritems(), d.itervalues(), d.iterkeys() are d.items(), d.values(), d.keys();
//   - d.has_key(k) is k in d;
//   - xrange is range, basestring and unicode are str, long is int;
//   - "del d[k]" and "del l[i]" (one target, on one line) are d.pop(k) and l.pop(i);
//
// while what Starlark cannot do (try/except, classes, raise, recursion) fails before the
// template runs, naming the file and line and saying what to write instead.

// py2Aliases are Python 2 builtins, as the Python 3 ones they stand for.
var py2Aliases = starlark.StringDict{
	"xrange":     starlark.Universe["range"],
	"basestring": starlark.Universe["str"],
	"unicode":    starlark.Universe["str"],
	"long":       starlark.Universe["int"],
}

// py2Methods are Python 2 dict methods, as the Python 3 methods they stand for.
var py2Methods = map[string]string{"iteritems": "items", "itervalues": "values", "iterkeys": "keys"}

// hasKeyBuiltin is what d.has_key(k) calls: a name no template can define or shadow.
const hasKeyBuiltin = "__python2_has_key__"

func init() {
	for name, v := range py2Aliases {
		starlarkBuiltins[name] = v
	}

	starlarkBuiltins[hasKeyBuiltin] = starlark.NewBuiltin("has_key", hasKey)
}

// hasKey(d, k) is Python 2's d.has_key(k): k in d, for dicts only.
func hasKey(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
	var d *starlark.Dict
	var k starlark.Value
	err := starlark.UnpackPositionalArgs(b.Name(), args, kwargs, 2, &d, &k)
	if err != nil {
		return nil, fmt.Errorf("has_key is a method of dicts: %w", err)
	}

	_, found, err := d.Get(k)
	if err != nil {
		return nil, err
	}

	return starlark.Bool(found), nil
}

// lineError is an error at a line of a template or module file, reported as file:line.
type lineError struct {
	line int
	msg  string
}

func (e *lineError) Error() string {
	return fmt.Sprintf("line %d: %s", e.line, e.msg)
}

// unsupported are the statements Starlark lacks that have no safe rewrite, and what to
// write instead. The messages are listed in README.md.
var unsupported = map[string]string{
	"try":     "try/except is not available in Starlark, which runs .py templates: check before acting instead (if key in d, d.get(key, default), isinstance(x, str)) and stop with fail(\"message\")",
	"except":  "try/except is not available in Starlark, which runs .py templates: check before acting instead (if key in d, d.get(key, default), isinstance(x, str)) and stop with fail(\"message\")",
	"finally": "try/finally is not available in Starlark, which runs .py templates: templates hold no resources to release, so put the code after the block",
	"class":   "classes are not available in Starlark, which runs .py templates: keep data in dicts and behaviour in functions",
	"raise":   "raise is not available in Starlark, which runs .py templates: stop with fail(\"message\"), which fails the expansion with that message",
}

var (
	pyStatement = regexp.MustCompile(`^(del|try|except|finally|class|raise)\b`)
	delLine     = regexp.MustCompile(`^del\s+(.+?)\s*$`)
)

// rewriteStatement handles a line starting with one of pyStatement's words: "del X[K]"
// becomes "X.pop(K)" padded with spaces to the same length; the others are errors.
func rewriteStatement(word string, text string, line int) (string, error) {
	if word != "del" {
		return "", &lineError{line: line, msg: unsupported[word]}
	}

	code := text[:codeLength(text)]
	m := delLine.FindStringSubmatch(code)
	bad := func(why string) error {
		return &lineError{line: line, msg: fmt.Sprintf("%s: %s", strings.TrimSpace(code), why)}
	}

	if m == nil {
		return "", bad("write del d[key] or del l[index], one target on one line")
	}

	target := m[1]
	open, commas, colon := subscript(target)
	switch {
	case open <= 0 || !strings.HasSuffix(target, "]"):
		return "", bad("Starlark cannot unbind a name: only del d[key] and del l[index] are supported (assign None, or build a new dict without the key)")
	case commas:
		return "", bad("write one del statement per target")
	case colon:
		return "", bad("del of a slice is not supported: build the list again, e.g. l = l[:i] + l[j:]")
	}

	replacement := target[:open] + ".pop(" + target[open+1:len(target)-1] + ")"
	return replacement + strings.Repeat(" ", len(code)-len(replacement)), nil
}

// codeLength is the length of a line's code before its comment, if any.
func codeLength(text string) int {
	quote := byte(0)
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '\'' || c == '"'):
			quote = c
		case quote == 0 && c == '#':
			return i
		}
	}

	return len(text)
}

// subscript finds, in a del target, the "[" opening its last subscript (at bracket depth
// 0), and whether the target has a comma at depth 0 (several targets) or the subscript a
// colon at depth 1 (a slice).
func subscript(target string) (open int, commas bool, colon bool) {
	open = -1
	depth := 0
	quote := byte(0)
	for i := 0; i < len(target); i++ {
		c := target[i]
		switch {
		case quote != 0 && c == '\\':
			i++
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
		case c == '\'' || c == '"':
			quote = c
		case c == '[' || c == '(' || c == '{':
			if depth == 0 && c == '[' {
				open = i
				colon = false
			}

			depth++
		case c == ']' || c == ')' || c == '}':
			depth--
		case c == ',' && depth == 0:
			commas = true
		case c == ':' && depth == 1 && open >= 0:
			colon = true
		}
	}

	return open, commas, colon
}

// python2 rewrites a parsed file's Python 2 dict methods into their Python 3 forms, in
// place (positions stay the template's own), and refuses recursion.
func python2(f *syntax.File) error {
	walk(f, func(n syntax.Node) {
		switch x := n.(type) {
		case *syntax.DotExpr:
			to, ok := py2Methods[x.Name.Name]
			if ok {
				x.Name.Name = to
			}
		case *syntax.CallExpr:
			dot, ok := x.Fn.(*syntax.DotExpr)
			if ok && dot.Name.Name == "has_key" && len(x.Args) == 1 {
				x.Fn = &syntax.Ident{NamePos: dot.NamePos, Name: hasKeyBuiltin}
				x.Args = []syntax.Expr{dot.X, x.Args[0]}
			}
		}
	})

	return recursion(f)
}

// recursion refuses functions that call themselves, directly or through other functions
// of the file (nested ones included): Starlark has no recursion, and would say so only
// when the call happens. Calls inside a lambda are left to that runtime check, since a
// lambda may well be called after its maker returned.
func recursion(f *syntax.File) error {
	type call struct {
		callee string
		pos    syntax.Position
	}

	var defs []*syntax.DefStmt
	walk(f, func(n syntax.Node) {
		def, ok := n.(*syntax.DefStmt)
		if ok {
			defs = append(defs, def)
		}
	})

	known := map[string]bool{}
	order := []string{}
	for _, def := range defs {
		if !known[def.Name.Name] {
			known[def.Name.Name] = true
			order = append(order, def.Name.Name)
		}
	}

	// The calls each function makes by name in its own body: not in the functions and
	// lambdas it defines, which make their own.
	calls := map[string][]call{}
	for _, def := range defs {
		var visit func(n syntax.Node)
		visit = func(n syntax.Node) {
			syntax.Walk(n, func(n syntax.Node) bool {
				switch x := n.(type) {
				case *syntax.DefStmt, *syntax.LambdaExpr:
					return false
				case *syntax.WhileStmt:
					visit(x.Cond)
					for _, stmt := range x.Body {
						visit(stmt)
					}

					return false
				case *syntax.CallExpr:
					id, ok := x.Fn.(*syntax.Ident)
					if ok && known[id.Name] {
						calls[def.Name.Name] = append(calls[def.Name.Name], call{id.Name, x.Lparen})
					}
				}

				return true
			})
		}

		for _, stmt := range def.Body {
			visit(stmt)
		}
	}

	// Depth-first search from each function, in the order the file defines them.
	done := map[string]bool{}
	var path []string
	var visit func(name string) error
	visit = func(name string) error {
		path = append(path, name)
		defer func() { path = path[:len(path)-1] }()
		for _, c := range calls[name] {
			for i, on := range path {
				if on != c.callee {
					continue
				}

				what := fmt.Sprintf("function %s calls itself", c.callee)
				if i < len(path)-1 {
					what = fmt.Sprintf("functions %s call each other", strings.Join(append(append([]string{}, path[i:]...), c.callee), " -> "))
				}

				return &lineError{line: int(c.pos.Line), msg: what + ": Starlark, which runs .py templates, has no recursion: rewrite it with a loop (for, or while over a list used as a stack)"}
			}

			if !done[c.callee] {
				err := visit(c.callee)
				if err != nil {
					return err
				}
			}
		}

		done[name] = true
		return nil
	}

	for _, name := range order {
		if !done[name] {
			err := visit(name)
			if err != nil {
				return err
			}
		}
	}

	return nil
}

// walk calls f for every node of a syntax tree. syntax.Walk does not know while loops
// (plain Starlark has none; we allow them), so they are walked here.
func walk(n syntax.Node, f func(syntax.Node)) {
	syntax.Walk(n, func(n syntax.Node) bool {
		f(n)
		loop, ok := n.(*syntax.WhileStmt)
		if !ok {
			return true
		}

		walk(loop.Cond, f)
		for _, stmt := range loop.Body {
			walk(stmt, f)
		}

		return false
	})
}
