package templates

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
)

// jinjaEngine renders .jinja templates with gonja (a Jinja2 engine in Go), parsing each
// template file once per expansion.
type jinjaEngine struct {
	e         *expander
	env       *exec.Environment
	config    *config.Config
	templates map[string]*exec.Template

	// sites are the checks of Jinja2's Undefined the templates were rewritten with; nil in
	// strict mode (see jinja_undefined.go).
	sites *undefinedSites
}

// jinjaEnvironment is shared by all expansions: the builtins with the sandbox's guards
// added (see jinja_sandbox.go). Per-render state lives in the render's context.
var jinjaEnvironment = &exec.Environment{
	Context:           exec.EmptyContext().Update(builtins.GlobalFunctions).Update(builtins.GlobalVariables),
	Filters:           sandboxFilters(),
	Tests:             builtins.Tests,
	ControlStructures: sandboxControlStructures(),
	Methods:           sandboxMethods(),
}

func newJinjaEngine(e *expander) *jinjaEngine {
	// Jinja2's defaults, which Deployment Manager used: no autoescape, no trimming.
	cfg := config.New()
	cfg.StrictUndefined = true
	return &jinjaEngine{e: e, env: jinjaEnvironment, config: cfg, templates: map[string]*exec.Template{}}
}

// render renders template t for one resource and returns the text it produced.
func (j *jinjaEngine) render(ctx context.Context, t *template, env map[string]any, props map[string]any, w where) (string, error) {
	return j.renderGlobals(ctx, t, map[string]any{
		"env":        env,
		"properties": deepCopy(props), // A template may mutate what it gets; the layout keeps props.
		"imports":    j.e.view(t.scope),
	}, w)
}

// renderGlobals renders template t with globals.
func (j *jinjaEngine) renderGlobals(ctx context.Context, t *template, globals map[string]any, w where) (string, error) {
	tpl, err := j.parse(t, w)
	if err != nil {
		return "", err
	}

	b := newJinjaBudget(ctx, j.e.limits)
	b.sites = j.sites
	defer j.e.warn(b)
	globals["range"] = b.rangeFunction
	globals[budgetKey] = b
	data := exec.NewContext(globals)

	out := &capWriter{budget: b}
	done := make(chan error, 1)
	go func() {
		defer func() {
			r := recover()
			if r != nil {
				done <- fmt.Errorf("the Jinja engine failed: %v", r)
			}
		}()

		done <- tpl.Execute(out, data)
	}()

	// The render runs apart so that a time limit is kept even inside a long builtin call;
	// once stopped, the render's next loop step, macro call or write ends it.
	select {
	case err = <-done:
	case <-ctx.Done():
		b.stop()
		return "", w.limitError("time", j.e.limits.Timeout, "the template runs too long; make it do less work or raise the limit")
	}

	hit := b.limitHit()
	if hit != nil {
		return "", w.limitError(hit.what, hit.limit, hit.hint)
	}

	if err != nil {
		f := b.failure(err)
		if f != nil {
			return "", w.errorf("%s: %s", f.Error(), f.hint)
		}

		// A name gonja looked up itself (the object of a method call, l.append(x)).
		name := strictName.FindStringSubmatch(err.Error())
		line := errorLine.FindStringSubmatch(err.Error())
		if j.sites != nil && name != nil && line != nil {
			return "", w.errorf("%s:%s: '%s' is undefined: templates see env, properties and imports, and what they set or import themselves", t.key, line[1], name[1])
		}

		return "", w.errorf("%s", jinjaMessage(err))
	}

	return out.buf.String(), nil
}

// parse parses template t once per expansion, with a loader that reads only the imports.
func (j *jinjaEngine) parse(t *template, w where) (*exec.Template, error) {
	tpl, ok := j.templates[t.key]
	if ok {
		return tpl, nil
	}

	loader := &importLoader{files: j.e.imports, scope: t.scope, sites: j.sites, file: t.key}
	tpl, err := exec.NewTemplate(t.key[len(t.scope):], j.config, loader, j.env)
	if err != nil {
		return nil, w.errorf("%s", jinjaMessage(err))
	}

	sandboxTree(tpl.Root())
	if j.sites != nil {
		rewriteUndefined(tpl.Root(), j.sites, t.key)
	}

	j.templates[t.key] = tpl
	return tpl, nil
}

// jinjaMessage keeps the useful part of a gonja error. Its parse errors quote the whole
// template source, and its render errors wrap once per nesting level (a template including
// itself gives a screenful): keep the outermost level, which has the line, and the cause.
func jinjaMessage(err error) string {
	for {
		inner := errors.Unwrap(err)
		if inner == nil || !strings.HasPrefix(err.Error(), "failed to parse template") {
			break
		}

		err = inner
	}

	parts := []string{}
	for e := err; e != nil; e = errors.Unwrap(e) {
		text := e.Error()
		next := errors.Unwrap(e)
		if next != nil {
			text = strings.TrimSuffix(strings.TrimSuffix(text, next.Error()), ": ")
		}

		if text != "" && text != "unable to execute template" {
			parts = append(parts, text)
		}
	}

	if len(parts) > 2 {
		// Keep also the innermost line, which is in the included or imported file.
		kept := []string{parts[0]}
		for i := len(parts) - 2; i > 0; i-- {
			if strings.Contains(parts[i], " at line ") && parts[i] != parts[0] {
				kept = append(kept, parts[i])
				break
			}
		}

		parts = append(kept, parts[len(parts)-1])
	}

	return undefinedHint(sandboxNoise.ReplaceAllString(strings.Join(parts, ": "), ""))
}

// strictName and errorLine find an undefined name and its line in a gonja error.
var (
	strictName = regexp.MustCompile(`Unable to evaluate name "([^"]+)"`)
	errorLine  = regexp.MustCompile(` at line (\d+)`)
)

// gonja's words for an undefined name and a missing key or attribute (StrictUndefined).
var (
	undefinedName = regexp.MustCompile(`Unable to evaluate name "([^"]+)"$`)
	undefinedItem = regexp.MustCompile(`(attribute '[^']*'|item '.*') not found$`)
)

// undefinedHint says what to do about an undefined name or a missing key: Deployment
// Manager's Jinja rendered them as empty text, which hid typos; here they are errors.
func undefinedHint(msg string) string {
	m := undefinedName.FindStringSubmatch(msg)
	if m != nil {
		return msg + fmt.Sprintf(": %s is not defined: templates see env, properties and imports, and what they set or import themselves", m[1])
	}

	if undefinedItem.MatchString(msg) {
		return msg + `: test an optional value with "is defined" or "| default(...)", or give it a default in the template's schema`
	}

	return msg
}

// sandboxNoise is how gonja reports an error that passed through one of the sandbox's
// filters (they let errors through untouched): not the template's business.
// A macro call's error also names the Go function gonja made of the macro.
var sandboxNoise = regexp.MustCompile(`unable to evaluate filter &\{[^{}]*\}: (invalid call to filter '__lxd_deploy_(cap|repeat|undefined)__': )?|invalid call to filter '__lxd_deploy_undefined__': |invalid call to function '[^']*MacroNodeToFunc[^']*': `)

// maxIncludeDepth bounds how deeply templates include, import or extend each other, so that
// a template including itself fails instead of exhausting the stack.
const maxIncludeDepth = 32

// importLoader serves Jinja's import, include and extends from the imports of a scope
// only: templates cannot read files. Paths are import names, not paths relative to the
// importing file, as with Jinja2's DictLoader that Deployment Manager used.
type importLoader struct {
	files map[string][]byte
	scope string
	depth int

	// sites, when not nil, are where the files it loads are rewritten for Jinja2's
	// Undefined; file is the imports key of the file it loads (for warnings and errors).
	sites *undefinedSites
	file  string
}

// Read implements loaders.Loader.
func (l *importLoader) Read(name string) (io.Reader, error) {
	content, ok := l.files[l.scope+name]
	if !ok {
		return nil, fmt.Errorf("%s is not among the imports: add it to the config's imports", name)
	}

	return bytes.NewReader(content), nil
}

// Resolve implements loaders.Loader.
func (l *importLoader) Resolve(name string) (string, error) {
	_, ok := l.files[l.scope+name]
	if !ok {
		return "", fmt.Errorf("%s is not among the imports: add it to the config's imports", name)
	}

	return name, nil
}

// Inherit implements loaders.Loader: gonja calls it for each nested import, include and
// extends, which is where their depth is counted.
func (l *importLoader) Inherit(from string) (loaders.Loader, error) {
	if l.depth >= maxIncludeDepth {
		return nil, fmt.Errorf("templates import, include or extend each other more than %d levels deep (does %s include itself?)", maxIncludeDepth, from)
	}

	return &importLoader{files: l.files, scope: l.scope, depth: l.depth + 1, sites: l.sites, file: l.scope + from}, nil
}
