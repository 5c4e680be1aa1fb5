package templates

import (
	"reflect"
	"strings"
	"unsafe"

	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// undefinedRewriter rewrites a parsed template for Jinja2's Undefined (jinja_undefined.go):
//   - a name, x.attr and x[key] become undefinedFilter lookups, which give an undefined
//     value for what is missing;
//   - a call, arithmetic and comparison operands, -x, x[a:b], and the filters Jinja2 fails
//     on (int, float, abs, round, indent, dictsort, attr, tojson) fail on one;
//   - output and ~ print it as nothing, with a warning;
//   - ==, != and in compare it as Jinja2 does; default and "is defined" know it.
//
// What it leaves alone keeps gonja's StrictUndefined (an error at the lookup): the target
// of a set, and the object of a method call written as a bare name (l.append(x)), which
// gonja writes back by name.
type undefinedRewriter struct {
	sites *undefinedSites
	file  string
	seen  map[uintptr]bool
}

// rewriteUndefined rewrites the tree of one template file.
func rewriteUndefined(root any, sites *undefinedSites, file string) {
	u := &undefinedRewriter{sites: sites, file: file, seen: map[uintptr]bool{}}
	u.walk(reflect.ValueOf(&root).Elem())
}

// Node types the rewrite treats specially.
var (
	typeSet   = reflect.TypeFor[controlStructures.SetControlStructure]()
	typeMacro = reflect.TypeFor[nodes.Macro]()
)

// walk visits v, replacing the expressions it holds (in interface fields, slices and maps).
func (u *undefinedRewriter) walk(v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return
		}

		inner := v.Elem()
		n, isNode := inner.Interface().(nodes.Node)
		if !isNode {
			u.walkPointer(inner)
			return
		}

		replaced := u.rewrite(n)
		if replaced != nil && reflect.TypeOf(replaced).AssignableTo(v.Type()) {
			v.Set(reflect.ValueOf(replaced))
		}
	case reflect.Pointer:
		u.walkPointer(v)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			u.walk(settable(v.Field(i)))
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			u.walk(v.Index(i))
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			item := reflect.New(iter.Value().Type()).Elem()
			item.Set(iter.Value())
			u.walk(item)
			v.SetMapIndex(iter.Key(), item)
		}
	}
}

func settable(f reflect.Value) reflect.Value {
	if f.CanSet() {
		return f
	}

	return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
}

// walkPointer visits what p points to once, with the special cases of the nodes that hold
// expressions that must not be replaced.
func (u *undefinedRewriter) walkPointer(p reflect.Value) {
	if p.Kind() != reflect.Pointer || p.IsNil() || u.seen[p.Pointer()] {
		return
	}

	if p.Type() == reflect.TypeFor[*tokens.Token]() {
		return
	}

	u.seen[p.Pointer()] = true
	if p.Type().Elem() == typeMacro && !u.sites.firstRewrite(p.Interface()) {
		return // Rewritten when parsed (see sandboxControlStructures).
	}

	switch n := p.Interface().(type) {
	case *nodes.Call:
		u.call(n)
		return
	case *nodes.Macro:
		u.macro(n)
		return
	}

	elem := reflect.NewAt(p.Type().Elem(), unsafe.Pointer(p.Pointer())).Elem()
	if p.Type().Elem() == typeSet {
		// The target is assigned, not read: keep it (a name, or x.attr and x[key] whose
		// object and key are read).
		target := settable(elem.FieldByName("target"))
		if !target.IsNil() {
			switch t := target.Interface().(type) {
			case *nodes.GetAttribute:
				u.walk(reflect.ValueOf(&t.Node).Elem())
			case *nodes.GetItem:
				u.walk(reflect.ValueOf(&t.Node).Elem())
				u.walk(reflect.ValueOf(&t.Arg).Elem())
			}
		}

		for i := 0; i < elem.NumField(); i++ {
			if elem.Type().Field(i).Name != "target" {
				u.walk(settable(elem.Field(i)))
			}
		}

		return
	}

	u.walk(elem)
}

// call rewrites a call: the function must be defined; a method call (x.m()) keeps its
// x.m for gonja, which calls methods through it.
func (u *undefinedRewriter) call(n *nodes.Call) {
	switch f := n.Func.(type) {
	case *nodes.GetAttribute:
		u.walk(reflect.ValueOf(&f.Node).Elem())
	case *nodes.Name:
		n.Func = u.filtered(&nodes.None{Location: f.Name}, &undefinedSite{kind: siteCallee, line: f.Name.Line, name: f.Name.Val, expr: f.Name.Val})
	default:
		u.walk(reflect.ValueOf(&n.Func).Elem())
		if e, ok := n.Func.(nodes.Expression); ok {
			n.Func = u.filtered(e, &undefinedSite{kind: siteGuard, line: e.Position().Line, call: true})
		}
	}

	_, bareName := n.Parent.(*nodes.Name)
	if n.Parent != nil && !bareName {
		u.walk(reflect.ValueOf(&n.Parent).Elem())
		if e, ok := n.Parent.(nodes.Expression); ok {
			n.Parent = u.guard(e, "")
		}
	}

	for i := range n.Args {
		u.walk(reflect.ValueOf(&n.Args[i]).Elem())
	}

	u.walk(reflect.ValueOf(n.Kwargs))
}

// macro rewrites a macro: a parameter that was not passed is undefined, as in Jinja2 (gonja
// parses it as an error).
func (u *undefinedRewriter) macro(m *nodes.Macro) {
	for _, p := range m.Kwargs {
		_, missing := p.Value.(*nodes.Error)
		key, _ := p.Key.(*nodes.String)
		if missing && key != nil {
			p.Value = u.filtered(&nodes.None{Location: key.Location}, &undefinedSite{kind: siteParam, line: key.Location.Line, name: key.Val})
			continue
		}

		u.walk(reflect.ValueOf(&p.Value).Elem())
	}

	u.walk(reflect.ValueOf(&m.Wrapper).Elem())
}

// rewrite rewrites the children of n, then returns n's replacement, or nil to keep it.
func (u *undefinedRewriter) rewrite(n nodes.Node) nodes.Node {
	p := reflect.ValueOf(n)
	first := p.Kind() == reflect.Pointer && !p.IsNil() && !u.seen[p.Pointer()]
	expr := ""
	switch n.(type) {
	case *nodes.GetAttribute, *nodes.GetItem:
		expr = n.String() // As written, before its parts are rewritten.
	}

	u.walkPointer(p)
	switch x := n.(type) {
	case *nodes.Name:
		if alwaysDefined[x.Name.Val] {
			return nil // gonja's own lookup: the same value, without a filter call.
		}

		return u.filtered(&nodes.None{Location: x.Name}, &undefinedSite{kind: siteName, line: x.Name.Line, name: x.Name.Val, expr: x.Name.Val})
	case *nodes.GetAttribute:
		target, ok := x.Node.(nodes.Expression)
		if !ok {
			return nil
		}

		return u.filtered(target, &undefinedSite{kind: siteAttr, line: x.Location.Line, name: x.Attribute, index: x.Index, isIdx: x.Attribute == "", expr: expr})
	case *nodes.GetItem:
		target, ok := x.Node.(nodes.Expression)
		key, keyOK := x.Arg.(nodes.Expression)
		if !ok || !keyOK {
			return nil
		}

		return u.filtered(target, &undefinedSite{kind: siteItem, line: x.Location.Line, expr: expr}, key)
	case *nodes.GetSlice:
		if e, ok := x.Node.(nodes.Expression); ok && first {
			x.Node = u.guard(e, "")
		}
	case *nodes.UnaryExpression:
		if first {
			x.Term = u.guard(x.Term, "")
		}
	case *nodes.BinaryExpression:
		if first {
			u.binary(x)
		}
	case *nodes.Output:
		if !first {
			return nil
		}

		x.Expression = u.text(x.Expression)
		if x.Alternative != nil {
			x.Alternative = u.text(x.Alternative)
		}
	case *nodes.FilteredExpression:
		if first {
			u.filters(x)
		}
	case *nodes.TestExpression:
		if x.Test == nil || x.Test.Token == nil {
			return nil
		}

		if len(x.Test.Args) == 0 && len(x.Test.Kwargs) == 0 {
			switch x.Test.Name {
			case "defined":
				return u.filtered(x.Expression, &undefinedSite{kind: siteDefined, line: x.Test.Token.Line})
			case "undefined":
				return u.filtered(x.Expression, &undefinedSite{kind: siteUndefined, line: x.Test.Token.Line})
			}
		}

		// Any other test: gonja's tests take an error for a value (false), where Jinja2
		// raises it (x.y is none, with x undefined).
		call := u.filterCall(x.Test.Token, &undefinedSite{kind: siteTest, line: x.Test.Token.Line, name: x.Test.Name}, x.Test.Args...)
		call.Kwargs = x.Test.Kwargs
		return &nodes.FilteredExpression{Expression: x.Expression, Filters: []*nodes.FilterCall{call}}
	}

	return nil
}

// binary checks the operands of the operators Jinja2 refuses undefined values for.
func (u *undefinedRewriter) binary(x *nodes.BinaryExpression) {
	if x.Operator == nil || x.Operator.Token == nil {
		return
	}

	switch x.Operator.Token.Val {
	case "+", "-", "*", "/", "//", "%", "**", "<", "<=", ">", ">=":
		x.Left, x.Right = u.guard(x.Left, ""), u.guard(x.Right, "")
	case "~":
		x.Left, x.Right = u.text(x.Left), u.text(x.Right)
	case "==", "!=":
		x.Left, x.Right = u.eq(x.Left), u.eq(x.Right)
	case "in":
		x.Left = u.eq(x.Left)
	}
}

// filterFailures are the filters that fail on an undefined value in Jinja2, with Jinja2's
// message when it is not the UndefinedError's.
var filterFailures = map[string]string{
	"int": "", "float": "", "indent": "", "dictsort": "", "attr": "",
	"abs":    "bad operand type for abs(): 'Undefined'",
	"round":  "type Undefined doesn't define __round__ method",
	"tojson": "Object of type Undefined is not JSON serializable",
}

// textFilters are the filters that read their input as text: Jinja2's str() makes an
// undefined value "" (some of gonja's refuse what is not a string).
var textFilters = map[string]bool{
	"capitalize": true, "center": true, "e": true, "escape": true, "forceescape": true, "format": true,
	"lower": true, "replace": true, "safe": true, "string": true, "striptags": true, "title": true,
	"trim": true, "truncate": true, "upper": true, "urlencode": true, "urlize": true, "wordcount": true,
	"wordwrap": true,
}

// filters puts a check before each filter that fails on an undefined value, and Jinja2's
// default in place of gonja's.
func (u *undefinedRewriter) filters(x *nodes.FilteredExpression) {
	if len(x.Filters) > 0 && strings.HasPrefix(x.Filters[len(x.Filters)-1].Name, "__lxd_deploy_") {
		return
	}

	out := make([]*nodes.FilterCall, 0, len(x.Filters))
	for _, f := range x.Filters {
		line := 0
		if f.Token != nil {
			line = f.Token.Line
		}

		msg, fails := filterFailures[f.Name]
		switch {
		case textFilters[f.Name]:
			out = append(out, u.filterCall(f.Token, &undefinedSite{kind: siteBlank, line: line}))
		case fails:
			out = append(out, u.filterCall(f.Token, &undefinedSite{kind: siteGuard, line: line, msg: msg}))
		case f.Name == "default" || f.Name == "d":
			call := u.filterCall(f.Token, &undefinedSite{kind: siteDefault, line: line})
			call.Args = append(call.Args, f.Args...)
			call.Kwargs = f.Kwargs
			out = append(out, call)
			continue
		}

		out = append(out, f)
	}

	x.Filters = out
}

func (u *undefinedRewriter) guard(e nodes.Expression, msg string) nodes.Expression {
	return u.filtered(e, &undefinedSite{kind: siteGuard, line: e.Position().Line, msg: msg})
}

func (u *undefinedRewriter) text(e nodes.Expression) nodes.Expression {
	// A lookup printed as it is ({{ properties.port }}, most outputs) does the text's work
	// itself: one filter call instead of two.
	f, ok := e.(*nodes.FilteredExpression)
	if ok && len(f.Filters) == 1 && f.Filters[0].Name == undefinedFilter {
		index := f.Filters[0].Args[0].(*nodes.Integer).Val
		site := u.sites.get(index)
		if site != nil && (site.kind == siteName || site.kind == siteAttr || site.kind == siteItem) {
			site.text = true
			return e
		}
	}

	return u.filtered(e, &undefinedSite{kind: siteText, line: e.Position().Line})
}

// alwaysDefined are the names every template sees, which need no check (a template that
// sets one to an undefined value still gets that value from gonja's lookup).
var alwaysDefined = map[string]bool{"env": true, "properties": true, "imports": true}

func (u *undefinedRewriter) eq(e nodes.Expression) nodes.Expression {
	return u.filtered(e, &undefinedSite{kind: siteEq, line: e.Position().Line})
}

// filtered returns e | undefinedFilter(site, args...).
func (u *undefinedRewriter) filtered(e nodes.Expression, site *undefinedSite, args ...nodes.Expression) nodes.Expression {
	return &nodes.FilteredExpression{Expression: e, Filters: []*nodes.FilterCall{u.filterCall(e.Position(), site, args...)}}
}

func (u *undefinedRewriter) filterCall(tok *tokens.Token, site *undefinedSite, args ...nodes.Expression) *nodes.FilterCall {
	site.file = u.file
	index := u.sites.add(site)
	if tok == nil {
		tok = &tokens.Token{Line: site.line}
	}

	number := &nodes.Integer{Location: &tokens.Token{Type: tokens.Integer, Val: "0", Line: tok.Line, Col: tok.Col}, Val: index}
	return &nodes.FilterCall{Token: tok, Name: undefinedFilter, Args: append([]nodes.Expression{number}, args...), Kwargs: map[string]nodes.Expression{}}
}
