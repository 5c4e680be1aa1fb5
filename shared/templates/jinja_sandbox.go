package templates

import (
	"reflect"
	"unsafe"

	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// Gonja has no execution limits of its own. The sandbox adds them without forking it:
//   - every loop iteration and macro call is charged a step (guardBody), and range() is
//     replaced by one that charges its elements;
//   - macro calls nest at most maxMacroDepth deep, so that recursion ends with an error
//     and not with a stack overflow, which would kill the process;
//   - the output, each macro's output, and the result of every operator, call and filter
//     are capped at Limits.OutputBytes (capFilter); "string * n" is checked before the
//     string is built (repeatFilter), as one such expression could allocate gigabytes;
//   - the render stops at its next step, call or write after the time limit.

// budgetKey is the context variable holding the render's budget. Its type has no exported
// fields or methods, so a template can see it but not use it.
const budgetKey = "__lxd_deploy_budget__"

// The filters the sandbox inserts into parsed templates.
const (
	capFilter    = "__lxd_deploy_cap__"
	repeatFilter = "__lxd_deploy_repeat__"
)

// maxMacroDepth bounds macro recursion (Python's own default recursion limit is 1000).
const maxMacroDepth = 200

// guardBody runs a loop or macro body after charging a step (and, for a macro, counting
// its depth and capping its output).
type guardBody struct {
	loc   *tokens.Token
	macro bool
	body  []nodes.Node
}

func (g *guardBody) Position() *tokens.Token { return g.loc }

func (g *guardBody) String() string {
	if g.macro {
		return "macro body"
	}

	return "loop body"
}

// Execute implements exec.ControlStructure.
func (g *guardBody) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	b := budgetOf(r.Environment.Context)
	if b != nil {
		err := b.charge(1)
		if err != nil {
			return err
		}

		if g.macro {
			b.depth++
			defer func() { b.depth-- }()
			if b.depth > maxMacroDepth {
				return b.fail("macro nesting", maxMacroDepth, "a macro calls itself without end, or too deeply")
			}

			r.Output = &capWriter{budget: b, inner: r.Output}
		}
	}

	for _, n := range g.body {
		err := nodes.Walk(r, n)
		if err != nil {
			return err
		}
	}

	return nil
}

func guardWrapper(w *nodes.Wrapper, macro bool) {
	if w == nil || len(w.Nodes) == 0 {
		return
	}

	_, done := w.Nodes[0].(*nodes.ControlStructureBlock)
	if done && len(w.Nodes) == 1 {
		_, done = w.Nodes[0].(*nodes.ControlStructureBlock).ControlStructure.(*guardBody)
		if done {
			return
		}
	}

	w.Nodes = []nodes.Node{&nodes.ControlStructureBlock{
		Location:         w.Location,
		Name:             "guard",
		ControlStructure: &guardBody{loc: w.Location, macro: macro, body: w.Nodes},
	}}
}

// sandboxControlStructures are gonja's control structures with guarded loop and macro
// bodies. Macros are guarded when parsed, which covers macros of imported files too.
func sandboxControlStructures() *exec.ControlStructureSet {
	set := exec.NewControlStructureSet(map[string]parser.ControlStructureParser{}).Update(builtins.ControlStructures)
	forParser, _ := set.Get("for")
	macroParser, _ := set.Get("macro")
	_ = set.Replace("for", func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		cs, err := forParser(p, args)
		f, ok := cs.(*controlStructures.ForControlStructure)
		if ok {
			guardWrapper(f.BodyWrapper, false)
		}

		return cs, err
	})

	_ = set.Replace("macro", func(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
		cs, err := macroParser(p, args)
		m, ok := cs.(*controlStructures.MacroControlStructure)
		if ok && m.Macro != nil {
			guardWrapper(m.Wrapper, true)
			sandboxTree(m.Macro)
			l, _ := p.Loader.(*importLoader)
			if l != nil && l.sites != nil {
				rewriteUndefined(m.Macro, l.sites, l.file)
			}
		}

		return cs, err
	})

	_ = set.Replace("include", includeParser)
	return set
}

// sandboxFilters are gonja's filters plus the sandbox's two.
func sandboxFilters() *exec.FilterSet {
	set := exec.NewFilterSet(map[string]exec.FilterFunction{}).Update(builtins.Filters)
	_ = set.Register(capFilter, func(e *exec.Evaluator, in *exec.Value, _ *exec.VarArgs) *exec.Value {
		b := budgetOf(e.Environment.Context)
		if b == nil || in.IsError() {
			return in
		}

		if (in.IsString() && in.Len() > b.maxBytes) || ((in.IsList() || in.IsDict()) && in.Len() > b.maxBytes/8) {
			return exec.AsValue(b.tooLarge())
		}

		return in
	})

	_ = set.Register(undefinedFilter, undefinedFilterFunction)
	_ = set.Register(repeatFilter, func(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
		b := budgetOf(e.Environment.Context)
		if b == nil || len(params.Args) != 1 || !in.IsString() || !params.Args[0].IsInteger() {
			return in
		}

		if n := params.Args[0].Integer(); n > 0 && in.Len() > 0 && n > b.maxBytes/in.Len() {
			return exec.AsValue(b.tooLarge())
		}

		return in
	})

	return set
}

// sandboxTree inserts the cap and repeat filters into a parsed tree. Some of gonja's nodes
// keep expressions in unexported fields (set, with, include), so the walk reaches them
// through reflect and unsafe; it only ever replaces an expression by a filtered one.
func sandboxTree(root any) {
	s := &sandboxer{seen: map[uintptr]bool{}}
	s.visit(reflect.ValueOf(&root).Elem())
}

type sandboxer struct {
	seen map[uintptr]bool
}

func (s *sandboxer) visit(v reflect.Value) {
	switch v.Kind() {
	case reflect.Interface:
		if v.IsNil() {
			return
		}

		inner := v.Elem()
		fe, ok := inner.Interface().(*nodes.FilteredExpression)
		if ok && isSandboxFilter(fe) {
			// Already wrapped (a macro is walked when parsed and again with its template):
			// walk what is inside, without wrapping it again.
			s.seen[inner.Pointer()] = true
			s.visitPointer(reflect.ValueOf(fe.Expression))
			for _, f := range fe.Filters {
				s.visitPointer(reflect.ValueOf(f))
			}

			return
		}

		s.visitPointer(inner)
		wrapped := s.wrap(inner)
		if wrapped != nil && reflect.TypeOf(wrapped).AssignableTo(v.Type()) {
			v.Set(reflect.ValueOf(wrapped))
		}
	case reflect.Pointer:
		s.visitPointer(v)
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if !f.CanSet() {
				f = reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
			}

			s.visit(f)
		}
	case reflect.Slice:
		for i := 0; i < v.Len(); i++ {
			s.visit(v.Index(i))
		}
	case reflect.Map:
		iter := v.MapRange()
		for iter.Next() {
			item := reflect.New(iter.Value().Type()).Elem()
			item.Set(iter.Value())
			s.visit(item)
			v.SetMapIndex(iter.Key(), item)
		}
	}
}

func (s *sandboxer) visitPointer(p reflect.Value) {
	if p.Kind() != reflect.Pointer || p.IsNil() || s.seen[p.Pointer()] {
		return
	}

	// Tokens hold no expressions; skipping them keeps the walk short.
	if p.Type() == reflect.TypeFor[*tokens.Token]() {
		return
	}

	s.seen[p.Pointer()] = true
	s.visit(reflect.NewAt(p.Type().Elem(), unsafe.Pointer(p.Pointer())).Elem())
}

// wrap returns the capped replacement of an expression, or nil to keep it.
func (s *sandboxer) wrap(v reflect.Value) nodes.Expression {
	switch n := v.Interface().(type) {
	case *nodes.BinaryExpression:
		if n.Operator == nil || n.Operator.Token == nil {
			return nil
		}

		if n.Operator.Token.Val == "*" {
			n.Left = &nodes.FilteredExpression{
				Expression: n.Left,
				Filters:    []*nodes.FilterCall{{Token: n.Operator.Token, Name: repeatFilter, Args: []nodes.Expression{n.Right}, Kwargs: map[string]nodes.Expression{}}},
			}
		}

		return capped(n, n.Operator.Token)
	case *nodes.Call:
		return capped(n, n.Location)
	case *nodes.FilteredExpression:
		return capped(n, n.Position())
	}

	return nil
}

func capped(e nodes.Expression, tok *tokens.Token) nodes.Expression {
	return &nodes.FilteredExpression{
		Expression: e,
		Filters:    []*nodes.FilterCall{{Token: tok, Name: capFilter, Kwargs: map[string]nodes.Expression{}}},
	}
}

func isSandboxFilter(fe *nodes.FilteredExpression) bool {
	if len(fe.Filters) == 0 {
		return false
	}

	name := fe.Filters[len(fe.Filters)-1].Name
	return name == capFilter || name == repeatFilter || name == undefinedFilter
}
