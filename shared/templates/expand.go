package templates

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
)

// Expansion is the result of expanding a config: Deployment Manager's expandedConfig and
// layout, plus the order in which to create the resources.
type Expansion struct {
	// Config holds the primitive resources, references resolved.
	Config Config `json:"config" yaml:"config"`

	// Layout is the tree of resources, templates included.
	Layout Layout `json:"layout" yaml:"layout"`

	// Order lists the names of Config's resources so that every resource comes after the
	// resources it references.
	Order []string `json:"order" yaml:"order"`

	// DependsOn maps a resource to the resources it references, sorted.
	DependsOn map[string][]string `json:"depends_on,omitempty" yaml:"depends_on,omitempty"`

	// Warnings are things the config does that work but should change (a schema's
	// Deployment Manager type alias), each naming the file and line.
	Warnings []Warning `json:"warnings,omitempty" yaml:"warnings,omitempty"`

	// Fetched holds the files fetched during expansion, keyed as in imports (see
	// registry.Prefix): add them to the imports to expand again without fetching.
	Fetched map[string][]byte `json:"-" yaml:"-"`
}

// expander is the state of one Expand call.
type expander struct {
	ctx     context.Context
	opts    Options
	limits  Limits
	imports map[string][]byte
	fetched map[string][]byte

	// primitives are the expanded resources so far; paths maps their names to their layout
	// paths, for uniqueness across the whole config and for error messages.
	primitives []Resource
	paths      map[string]string

	schemas  map[string]*schema
	warnings []Warning
	warned   map[Warning]bool
	parsers  chan struct{} // a slot per YAML parse running in the background
	jinja    *jinjaEngine
	starlark *starlarkEngine
	views    map[string]map[string]string
}

// frame is where expansion is: the output of a template (or the config) being expanded.
type frame struct {
	path     string                      // layout path of the template resource ("" for the config)
	template string                      // imports key of the template ("" for the config)
	scope    string                      // prefix of the imports its types and helpers are found under
	defaults []map[string]map[string]any // defaults by type, outermost first
	stack    []string                    // templates being expanded, outermost first
}

// Expand expands a config: every template resource, recursively, until only primitives
// remain; then it resolves references and orders the result. imports holds the files the
// config may use (templates, schemas, helpers, raw files), by import name. Templates
// cannot read anything else: not the disk, not the network. Only Options.Fetch fetches,
// and only types that are URLs or registry references.
func Expand(ctx context.Context, config []byte, imports map[string][]byte, opts Options) (*Expansion, error) {
	e, exp, err := expand(ctx, config, imports, opts)
	var expandErr *ExpandError
	if errors.As(err, &expandErr) && len(e.warnings) > 0 {
		expandErr.Warnings = append(append([]Warning{}, e.warnings...), expandErr.Warnings...)
	}

	return exp, err
}

func expand(ctx context.Context, config []byte, imports map[string][]byte, opts Options) (*expander, *Expansion, error) {
	e := &expander{
		ctx:     ctx,
		opts:    opts,
		limits:  opts.Limits.withDefaults(),
		imports: make(map[string][]byte, len(imports)),
		fetched: map[string][]byte{},
		paths:   map[string]string{},
		schemas: map[string]*schema{},
		views:   map[string]map[string]string{},
		warned:  map[Warning]bool{},
		parsers: make(chan struct{}, runtime.GOMAXPROCS(0)),
	}

	for k, v := range imports {
		e.imports[k] = v
	}

	e.jinja = newJinjaEngine(e)
	e.starlark = newStarlarkEngine(e)

	doc, err := parseYAML(config)
	if err != nil {
		return e, nil, &ExpandError{Msg: fmt.Sprintf("the config is not valid YAML: %v", err)}
	}

	in, err := parseInput(doc, where{}, "the config")
	if err != nil {
		return e, nil, err
	}

	for _, imp := range in.imports {
		_, ok := e.imports[imp.Key()]
		if !ok {
			return e, nil, &ExpandError{Msg: fmt.Sprintf("the config imports %s but it was not supplied: send the imported files with the config (the CLI does)", imp.Key())}
		}
	}

	if in.resources == nil {
		return e, nil, &ExpandError{Msg: "the config has no resources: a config must have a resources list (resources: [] for none)"}
	}

	if !opts.StrictUndefined && !in.strictUndefined {
		e.jinja.sites = newUndefinedSites() // Jinja2's default Undefined.
	}

	err = substituteProperties(in)
	if err != nil {
		return e, nil, err
	}

	root := frame{defaults: []map[string]map[string]any{in.defaults}}
	layout, err := e.expandResources(root, in.resources)
	if err != nil {
		return e, nil, err
	}

	order, deps, err := resolveReferences(e.primitives, e.paths)
	if err != nil {
		return e, nil, err
	}

	return e, &Expansion{
		Config:    Config{Resources: e.primitives},
		Layout:    Layout{Resources: layout},
		Order:     order,
		DependsOn: deps,
		Warnings:  e.warnings,
		Fetched:   e.fetched,
	}, nil
}

// step is one resource of a config or template output on its way through expansion.
type step struct {
	r     Resource
	path  string
	props map[string]any
	t     *template // nil for a primitive

	// For a template: its output, parsed in the background (parsed is closed when done).
	parsed chan struct{}
	doc    any
	err    error
}

// expandResources expands the resources of one config or template output. It renders the
// templates among them first, parsing each one's YAML output in the background while the
// next one renders (parsing is most of the work, and it shares nothing), then expands them
// in order, depth first. Errors are reported in that same order: a render error of a later
// resource waits until the earlier resources are expanded.
func (e *expander) expandResources(fr frame, resources []Resource) ([]LayoutResource, error) {
	steps := make([]*step, 0, len(resources))
	var failed error
	for _, r := range resources {
		st, err := e.prepare(fr, r)
		if err != nil {
			failed = err
			break
		}

		steps = append(steps, st)
	}

	layout := make([]LayoutResource, 0, len(resources))
	for i, st := range steps {
		if st.t == nil {
			err := e.addPrimitive(Resource{Name: st.r.Name, Type: st.r.Type, Properties: st.props}, where{template: fr.template, resource: st.path})
			if err != nil {
				e.drain(steps[i+1:])
				return nil, err
			}

			layout = append(layout, LayoutResource{Name: st.r.Name, Type: st.r.Type})
			continue
		}

		node, err := e.finish(fr, st)
		if err != nil {
			e.drain(steps[i+1:])
			return nil, err
		}

		layout = append(layout, *node)
	}

	if failed != nil {
		return nil, failed
	}

	return layout, nil
}

// drain waits for the background parses of steps that will not be used.
func (e *expander) drain(steps []*step) {
	for _, st := range steps {
		if st.parsed != nil {
			<-st.parsed
		}
	}
}

// prepare resolves a resource's type and properties and, for a template, checks it may
// run, applies its schema and renders it.
func (e *expander) prepare(fr frame, r Resource) (*step, error) {
	st := &step{r: r, path: joinPath(fr.path, r.Name)}
	w := where{template: fr.template, resource: st.path}
	err := e.ctx.Err()
	if err != nil {
		return nil, &ExpandError{Resource: st.path, Msg: fmt.Sprintf("expansion stopped: %v", err), Err: err}
	}

	st.t, err = e.resolve(fr.scope, r.Type, w)
	if err != nil {
		return nil, err
	}

	st.props = spread(fr.defaults, r.Type, r.Properties)
	if st.t == nil {
		return st, nil
	}

	w = where{template: st.t.key, resource: st.path}
	for i, key := range fr.stack {
		if key == st.t.key {
			cycle := append(append([]string{}, fr.stack[i:]...), st.t.key)
			return nil, w.errorf("template cycle %s: a template must not invoke itself, directly or through other templates", strings.Join(cycle, " -> "))
		}
	}

	if len(fr.stack) >= e.limits.Depth {
		return nil, w.limitError("nesting depth", e.limits.Depth, "templates nest too deeply; flatten them or raise the limit")
	}

	sch, err := e.schema(st.t, w)
	if err != nil {
		return nil, err
	}

	if sch != nil {
		st.props, err = sch.apply(st.props, w)
		if err != nil {
			return nil, err
		}
	}

	if st.props == nil {
		st.props = map[string]any{}
	}

	return st, e.render(st, w)
}

// finish expands what a rendered template produced, and returns its layout node.
func (e *expander) finish(fr frame, st *step) (*LayoutResource, error) {
	<-st.parsed
	if st.err != nil {
		return nil, st.err
	}

	w := where{template: st.t.key, resource: st.path}
	in, err := parseInput(st.doc, w, "the template's output")
	if err != nil {
		return nil, err
	}

	// As in Deployment Manager, a template must say what it expands into, if only
	// "resources: []": no output, or output without resources, is a mistake in it.
	if in.resources == nil {
		return nil, w.errorf("template %s returned no resources: a template must output a YAML document with a resources list", st.t.key)
	}

	if in.strictSet {
		return nil, w.errorf("the output of template %s sets strict_undefined: only the config can (it applies to the whole expansion)", st.t.key)
	}

	child := frame{
		path:     st.path,
		template: st.t.key,
		scope:    st.t.scope,
		defaults: append(append([]map[string]map[string]any{}, fr.defaults...), in.defaults),
		stack:    append(append([]string{}, fr.stack...), st.t.key),
	}

	children, err := e.expandResources(child, in.resources)
	if err != nil {
		return nil, err
	}

	return &LayoutResource{Name: st.r.Name, Type: st.r.Type, Properties: st.props, Resources: children}, nil
}

// spread resolves a resource's properties (seed 003's config spread): its explicit
// properties, over the defaults for its type given by the enclosing templates and config,
// outer ones winning over inner ones. The schema's defaults, lowest of all, come later.
func spread(chain []map[string]map[string]any, typ string, explicit map[string]any) map[string]any {
	var merged map[string]any
	for i := len(chain) - 1; i >= 0; i-- {
		d, ok := chain[i][typ]
		if ok {
			merged = mergeInto(merged, d)
		}
	}

	if merged == nil {
		return explicit
	}

	return mergeInto(merged, explicit)
}

func (e *expander) addPrimitive(r Resource, w where) error {
	if len(e.primitives) >= e.limits.Resources {
		return w.limitError("resource count", e.limits.Resources, "the config expands to too many resources; split the deployment or raise the limit")
	}

	other, dup := e.paths[r.Name]
	if dup {
		return w.errorf("expanded resource name %q is also used by %q: the names of expanded resources must be unique in the deployment (templates usually prefix them with env['name'])", r.Name, other)
	}

	e.paths[r.Name] = w.resource
	e.primitives = append(e.primitives, r)
	return nil
}

// render runs a template under its limits. Its output is parsed into st.doc in the
// background; st.parsed is closed when that is done.
func (e *expander) render(st *step, w where) error {
	env := map[string]any{
		"deployment": e.opts.Env.Deployment,
		"project":    e.opts.Env.Project,
		"name":       st.r.Name,
		"type":       st.r.Type,
	}

	ctx, cancel := context.WithTimeout(e.ctx, e.limits.Timeout)
	defer cancel()

	st.parsed = make(chan struct{})
	stopped := func(err error) error {
		if err != nil && e.ctx.Err() != nil && !errors.Is(err, ErrLimit) {
			return &ExpandError{Template: st.t.key, Resource: w.resource, Msg: fmt.Sprintf("expansion stopped: %v", e.ctx.Err()), Err: e.ctx.Err()}
		}

		return err
	}

	if st.t.lang != langJinja {
		doc, err := e.starlark.run(ctx, st.t, env, st.props, w)
		st.doc = doc
		close(st.parsed)
		return stopped(err)
	}

	text, err := e.jinja.render(ctx, st.t, env, st.props, w)
	if err != nil {
		close(st.parsed)
		return stopped(err)
	}

	e.parsers <- struct{}{}
	go func() {
		defer func() {
			<-e.parsers
			close(st.parsed)
		}()

		st.doc, st.err = parseYAML([]byte(text))
		if st.err != nil {
			st.err = w.errorf("the template's output is not valid YAML: %v", st.err)
		}
	}()

	return nil
}

// view is the imports map a template in scope sees: its scope's files, keys relative.
func (e *expander) view(scope string) map[string]string {
	v, ok := e.views[scope]
	if ok {
		return v
	}

	v = map[string]string{}
	for k, content := range e.imports {
		if strings.HasPrefix(k, scope) {
			v[k[len(scope):]] = string(content)
		}
	}

	e.views[scope] = v
	return v
}

// warn keeps the warnings of a Jinja render, each once per expansion (a template rendered
// for many resources warns once per place).
func (e *expander) warn(b *jinjaBudget) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, w := range b.warnings {
		if !e.warned[w] {
			e.warned[w] = true
			e.warnings = append(e.warnings, w)
		}
	}
}
