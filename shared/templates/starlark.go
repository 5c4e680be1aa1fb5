package templates

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.starlark.net/starlark"
	"go.starlark.net/starlarkstruct"
	"go.starlark.net/syntax"
)

// starlarkEngine runs .py and .star templates as Starlark, the hermetic dialect of Python:
// no file, network or clock access, and a step counter the interpreter checks. Programs
// and helper modules are compiled and run once per expansion; helper modules are frozen
// after their first run, so templates share them without being able to change them.
type starlarkEngine struct {
	e        *expander
	programs map[string]*starlarkProgram
	modules  map[string]starlark.StringDict
	dicts    map[string]*starlark.Dict // the imports dict of each scope
	stack    []string                  // modules being loaded, for import cycles
}

type starlarkProgram struct {
	prog    *starlark.Program
	imports []pyImport
}

// Python allows while loops, top-level if/for, sets and rebinding globals, and templates
// written for Deployment Manager use them. Recursion stays off (Starlark's default): a
// function cannot call itself, so a template cannot exhaust the stack.
var starlarkOptions = &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true}

func newStarlarkEngine(e *expander) *starlarkEngine {
	return &starlarkEngine{e: e, programs: map[string]*starlarkProgram{}, modules: map[string]starlark.StringDict{}, dicts: map[string]*starlark.Dict{}}
}

// run calls GenerateConfig(context) of template t and returns its output as plain data.
func (s *starlarkEngine) run(ctx context.Context, t *template, env map[string]any, props map[string]any, w where) (out any, err error) {
	limits := s.e.limits
	stepHit := false
	thread := &starlark.Thread{Name: t.key, Print: func(*starlark.Thread, string) {}}
	thread.Load = func(th *starlark.Thread, module string) (starlark.StringDict, error) {
		return s.loadFile(th, t.scope, t.scope+module)
	}

	thread.SetMaxExecutionSteps(uint64(limits.Steps))
	thread.OnMaxSteps = func(th *starlark.Thread) {
		stepHit = true
		th.Cancel("step limit")
	}

	stop := context.AfterFunc(ctx, func() { thread.Cancel("time limit") })
	defer stop()

	defer func() {
		r := recover()
		if r != nil {
			out, err = nil, w.errorf("the Starlark interpreter failed: %v", r)
		}
	}()

	s.stack = s.stack[:0]
	result, err := s.call(thread, t, env, props)
	switch {
	case stepHit:
		return nil, w.limitError("step", limits.Steps, "the template computes too much; make it do less work or raise the limit")
	case ctx.Err() != nil && s.e.ctx.Err() == nil:
		return nil, w.limitError("time", limits.Timeout, "the template runs too long; make it do less work or raise the limit")
	case err != nil:
		return nil, w.errorf("%s", starlarkMessage(err))
	}

	switch r := result.(type) {
	case starlark.String:
		if len(r) > limits.OutputBytes {
			return nil, w.limitError("output size", fmt.Sprintf("%d bytes", limits.OutputBytes), "the template builds too much text; make it smaller or raise the limit")
		}

		doc, err := parseYAML([]byte(r))
		if err != nil {
			return nil, w.errorf("GenerateConfig returned text that is not valid YAML: %v", err)
		}

		return doc, nil
	case *starlark.Dict:
		doc, err := fromStarlark(r, &sizeBudget{left: limits.OutputBytes})
		if errors.Is(err, errTooLarge) {
			return nil, w.limitError("output size", fmt.Sprintf("%d bytes", limits.OutputBytes), "the template returns too much data; make it smaller or raise the limit")
		}

		if err != nil {
			return nil, w.errorf("GenerateConfig returned data that cannot be a config: %v", err)
		}

		return doc, nil
	}

	return nil, w.errorf("GenerateConfig returned a %s: return a dict with resources, or YAML text", result.Type())
}

func (s *starlarkEngine) call(thread *starlark.Thread, t *template, env map[string]any, props map[string]any) (starlark.Value, error) {
	globals, err := s.exec(thread, t.key, t.scope)
	if err != nil {
		return nil, err
	}

	fn, ok := globals["GenerateConfig"].(starlark.Callable)
	if !ok {
		return nil, fmt.Errorf("%s defines no GenerateConfig(context) function: define one that returns the config, as a dict or YAML text", t.key)
	}

	context := starlarkstruct.FromStringDict(starlark.String("context"), starlark.StringDict{
		"env":        toStarlark(env),
		"properties": toStarlark(props),
		"imports":    s.importsDict(t.scope),
	})

	return starlark.Call(thread, fn, starlark.Tuple{context}, nil)
}

// importsDict is the frozen imports dict of a scope, built once.
func (s *starlarkEngine) importsDict(scope string) *starlark.Dict {
	d, ok := s.dicts[scope]
	if !ok {
		d = toStarlark(s.e.view(scope)).(*starlark.Dict)
		d.Freeze()
		s.dicts[scope] = d
	}

	return d
}

// compile compiles a template or module file once.
func (s *starlarkEngine) compile(key string) (*starlarkProgram, error) {
	p, ok := s.programs[key]
	if ok {
		return p, nil
	}

	rewritten, imports, err := pythonCompat(string(s.e.imports[key]))
	if err != nil {
		return nil, atLine(key, err)
	}

	bound := map[string]bool{}
	for _, imp := range imports {
		for _, name := range imp.bindings() {
			bound[name] = true
		}
	}

	isPredeclared := func(name string) bool { return bound[name] || starlarkBuiltins.Has(name) }
	f, err := starlarkOptions.Parse(key, rewritten, 0)
	if err != nil {
		return nil, err
	}

	err = python2(f)
	if err != nil {
		return nil, atLine(key, err)
	}

	prog, err := starlark.FileProgram(f, isPredeclared)
	if err != nil {
		return nil, err
	}

	p = &starlarkProgram{prog: prog, imports: imports}
	s.programs[key] = p
	return p, nil
}

// atLine formats an error at a line of file key as "file:line: message".
func atLine(key string, err error) error {
	var le *lineError
	if errors.As(err, &le) {
		return fmt.Errorf("%s:%d: %s", key, le.line, le.msg)
	}

	return fmt.Errorf("%s: %w", key, err)
}

// bindings are the names an import statement binds.
func (imp pyImport) bindings() []string {
	if imp.from {
		names := []string{}
		for _, n := range imp.names {
			names = append(names, n[1])
		}

		return names
	}

	if imp.alias != "" {
		return []string{imp.alias}
	}

	top, _, _ := strings.Cut(imp.module, ".")
	return []string{top}
}

// exec runs a template or module file with its imports bound, and returns its globals.
func (s *starlarkEngine) exec(thread *starlark.Thread, key string, scope string) (starlark.StringDict, error) {
	p, err := s.compile(key)
	if err != nil {
		return nil, err
	}

	predeclared := starlark.StringDict{}
	for name, v := range starlarkBuiltins {
		predeclared[name] = v
	}

	packages := map[*starlarkstruct.Module]bool{} // package modules made for this file's bindings
	for _, imp := range p.imports {
		err := s.bind(thread, scope, imp, predeclared, packages)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", key, imp.line, err)
		}
	}

	return p.prog.Init(thread, predeclared)
}

// bind adds the names an import statement binds to predeclared.
func (s *starlarkEngine) bind(thread *starlark.Thread, scope string, imp pyImport, predeclared starlark.StringDict, packages map[*starlarkstruct.Module]bool) error {
	if imp.from {
		for _, n := range imp.names {
			sub := imp.module + "." + n[0]
			if s.moduleKey(scope, sub) != "" {
				mod, err := s.loadModule(thread, scope, sub)
				if err != nil {
					return err
				}

				predeclared[n[1]] = mod
				continue
			}

			mod, err := s.loadModule(thread, scope, imp.module)
			if err != nil {
				return err
			}

			v, ok := mod.Members[n[0]]
			if !ok {
				return fmt.Errorf("module %s has no %s", imp.module, n[0])
			}

			predeclared[n[1]] = v
		}

		return nil
	}

	mod, err := s.loadModule(thread, scope, imp.module)
	if err != nil {
		return err
	}

	parts := strings.Split(imp.module, ".")
	if imp.alias != "" || len(parts) == 1 {
		predeclared[imp.bindings()[0]] = mod
		return nil
	}

	// "import a.b.c" binds a, a package whose attribute b has the attribute c, as Python does.
	var node *starlarkstruct.Module
	for i, part := range parts[:len(parts)-1] {
		var parent starlark.StringDict = predeclared
		if node != nil {
			parent = node.Members
		}

		child, ok := parent[part].(*starlarkstruct.Module)
		if !ok || !packages[child] {
			child, err = s.newPackage(thread, scope, strings.Join(parts[:i+1], "."))
			if err != nil {
				return err
			}

			packages[child] = true
			parent[part] = child
		}

		node = child
	}

	node.Members[parts[len(parts)-1]] = mod
	return nil
}

// newPackage makes a fresh, mutable package module: the globals of its __init__ file if
// it has one, to which its imported submodules are added.
func (s *starlarkEngine) newPackage(thread *starlark.Thread, scope string, name string) (*starlarkstruct.Module, error) {
	pkg := &starlarkstruct.Module{Name: name, Members: starlark.StringDict{}}
	key := scope + strings.ReplaceAll(name, ".", "/") + "/__init__.py"
	_, ok := s.e.imports[key]
	if ok {
		globals, err := s.loadFile(thread, scope, key)
		if err != nil {
			return nil, err
		}

		for k, v := range globals {
			pkg.Members[k] = v
		}
	}

	return pkg, nil
}

// moduleKey finds the file of a dotted module name among the imports, or "".
func (s *starlarkEngine) moduleKey(scope string, module string) string {
	base := scope + strings.ReplaceAll(module, ".", "/")
	for _, key := range []string{base + ".py", base + ".star", base + "/__init__.py"} {
		_, ok := s.e.imports[key]
		if ok {
			return key
		}
	}

	return ""
}

// loadModule returns a module: built in, or run from the imports.
func (s *starlarkEngine) loadModule(thread *starlark.Thread, scope string, module string) (*starlarkstruct.Module, error) {
	builtin, ok := builtinModules[module]
	if ok {
		return builtin, nil
	}

	key := s.moduleKey(scope, module)
	if key == "" {
		path := strings.ReplaceAll(module, ".", "/")
		return nil, fmt.Errorf("module %s is neither built in (yaml, json, math) nor among the imports (as %s.py or %s/__init__.py): add it to the config's imports", module, path, path)
	}

	globals, err := s.loadFile(thread, scope, key)
	if err != nil {
		return nil, err
	}

	return &starlarkstruct.Module{Name: module, Members: globals}, nil
}

// loadFile runs a helper file once and returns its frozen globals. It also serves
// Starlark's load("file.star", "name").
func (s *starlarkEngine) loadFile(thread *starlark.Thread, scope string, key string) (starlark.StringDict, error) {
	globals, ok := s.modules[key]
	if ok {
		return globals, nil
	}

	_, ok = s.e.imports[key]
	if !ok {
		return nil, fmt.Errorf("%s is not among the imports: add it to the config's imports", strings.TrimPrefix(key, scope))
	}

	for i, loading := range s.stack {
		if loading == key {
			return nil, fmt.Errorf("import cycle %s -> %s: helper modules must not import each other in a loop", strings.Join(s.stack[i:], " -> "), key)
		}
	}

	s.stack = append(s.stack, key)
	globals, err := s.exec(thread, key, scope)
	s.stack = s.stack[:len(s.stack)-1]
	if err != nil {
		return nil, err
	}

	globals.Freeze()
	s.modules[key] = globals
	return globals, nil
}

// starlarkMessage formats an error with the position of the template line that caused it.
func starlarkMessage(err error) string {
	var evalErr *starlark.EvalError
	if !errors.As(err, &evalErr) {
		return err.Error()
	}

	for i := len(evalErr.CallStack) - 1; i >= 0; i-- {
		pos := evalErr.CallStack[i].Pos
		if pos.Filename() != "" && pos.Filename() != "<builtin>" {
			return fmt.Sprintf("%s: %s", pos, evalErr.Msg)
		}
	}

	return evalErr.Msg
}
