package templates

import (
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/nikolalohinski/gonja/v2/exec"
)

// Jinja2's default Undefined, which Deployment Manager rendered its templates with: a
// missing name, key or attribute is a value that is falsy, prints as nothing, has length 0
// and iterates as empty, compares equal only to another undefined value, and whose
// attributes, items, calls and arithmetic fail with Jinja2's UndefinedError message
// ('dict object' has no attribute 'cpu'). gonja knows only StrictUndefined (an error at
// the lookup) or none at all (None), so the engine rewrites parsed templates (see
// jinja_undefined_rewrite.go): lookups go through undefinedFilter, which makes these
// values, and the operations Jinja2 refuses on them check for them first.
//
// Strict mode (Options.StrictUndefined, a config's strict_undefined: true) skips the
// rewrite: gonja's StrictUndefined, an error at every lookup of something missing.

// jinjaUndefined is an undefined value. It is a slice of length 0 so that gonja, without
// knowing the type, treats it as Jinja2 treats Undefined: false, empty, iterated as
// nothing; its one element, beyond its length, says where it came from.
type jinjaUndefined []undefinedInfo

// undefinedInfo is Jinja2's Undefined's hint, obj and name, plus where the value came
// from, for warnings.
type undefinedInfo struct {
	hint    string      // a message of its own (a macro parameter that was not passed)
	hasObj  bool        // false: an undefined name
	obj     *exec.Value // what an attribute or item was looked up on
	name    any         // the name, attribute or key looked up
	expr    string      // the expression, as written
	file    string
	line    int
	isIndex bool // name is a key or index (obj[name]), not an attribute
}

func newUndefined(info undefinedInfo) *exec.Value {
	u := make(jinjaUndefined, 1)
	u[0] = info
	return exec.AsValue(u[:0])
}

func (u jinjaUndefined) info() *undefinedInfo {
	return &u[:1][0]
}

// String is what rendering it prints: nothing.
func (u jinjaUndefined) String() string {
	return ""
}

// GetAttribute and GetItem are gonja's own lookups on the value (where the engine did not
// rewrite them): Jinja2's UndefinedError.
func (u jinjaUndefined) GetAttribute(string) (*exec.Value, bool) {
	return exec.AsValue(fmt.Errorf("%s", u.info().message())), false
}

func (u jinjaUndefined) GetItem(any) (*exec.Value, bool) {
	return exec.AsValue(fmt.Errorf("%s", u.info().message())), false
}

// undefinedOf returns the undefined value v holds, or nil.
func undefinedOf(v *exec.Value) *undefinedInfo {
	if v == nil || !v.Val.IsValid() || !v.Val.CanInterface() {
		return nil
	}

	u, ok := v.Val.Interface().(jinjaUndefined)
	if !ok || cap(u) < 1 {
		return nil
	}

	return u.info()
}

// message is Jinja2's UndefinedError message for the value (Undefined._undefined_message).
func (i *undefinedInfo) message() string {
	if i.hint != "" {
		return i.hint
	}

	if !i.hasObj {
		return fmt.Sprintf("%s is undefined", pyRepr(i.name))
	}

	if _, isString := i.name.(string); !isString {
		return fmt.Sprintf("%s has no element %s", objectTypeRepr(i.obj), pyRepr(i.name))
	}

	return fmt.Sprintf("%s has no attribute %s", pyRepr(objectTypeRepr(i.obj)), pyRepr(i.name))
}

// objectTypeRepr is Jinja2's object_type_repr: "dict object", "None".
func objectTypeRepr(v *exec.Value) string {
	switch {
	case v == nil || v.IsNil():
		return "None"
	case v.IsBool():
		return "bool object"
	case v.IsInteger():
		return "int object"
	case v.IsFloat():
		return "float object"
	case v.IsString():
		return "str object"
	case v.IsList():
		return "list object"
	case v.IsDict():
		return "dict object"
	case v.IsCallable():
		return "function object"
	}

	return "object"
}

// pyRepr is Python's repr of a name or key: 'cpu', 5, None.
func pyRepr(v any) string {
	switch x := v.(type) {
	case string:
		if strings.Contains(x, "'") && !strings.Contains(x, `"`) {
			return `"` + strings.ReplaceAll(x, `\`, `\\`) + `"`
		}

		return "'" + strings.ReplaceAll(strings.ReplaceAll(x, `\`, `\\`), "'", `\'`) + "'"
	case int:
		return strconv.Itoa(x)
	case nil:
		return "None"
	case *exec.Value:
		if undefinedOf(x) != nil {
			return "Undefined"
		}

		if x.IsString() {
			return pyRepr(x.String())
		}

		if x.IsNil() {
			return "None"
		}

		return x.String()
	}

	return fmt.Sprint(v)
}

// undefinedMarker stands for an undefined value in == and !=: equal to itself only, as
// Jinja2's Undefined is (an empty list would otherwise equal it).
type undefinedMarker struct{}

// undefinedError is Jinja2's UndefinedError, where it happened.
type undefinedError struct {
	file string
	line int
	msg  string
	hint string
}

func (e *undefinedError) Error() string {
	return fmt.Sprintf("%s:%d: %s", e.file, e.line, e.msg)
}

// siteKind is what the engine checks at one place of a template.
type siteKind int

const (
	siteName      siteKind = iota // a name: its value, or an undefined one
	siteCallee                    // a name or value about to be called: it must be defined
	siteAttr                      // x.attr, x.0
	siteItem                      // x[key]
	siteGuard                     // an operand Jinja2 refuses undefined (+, <, -x, x[1:2], int...)
	siteText                      // output and ~: an undefined value prints as nothing, with a warning
	siteEq                        // ==, !=, in: an undefined value equals only another
	siteParam                     // a macro parameter that was not passed
	siteDefault                   // the default (d) filter, as Jinja2 has it
	siteDefined                   // "is defined"
	siteUndefined                 // "is undefined"
	siteBlank                     // before a text filter: an undefined value is "", as Jinja2's str() makes it
	siteTest                      // "is <test>": an error stays one
)

// undefinedSite is one place of a template the rewrite made check for undefined values.
type undefinedSite struct {
	kind  siteKind
	file  string
	line  int
	name  string // the name, attribute or parameter
	index int    // x.0
	isIdx bool
	expr  string // the expression, as written
	msg   string // siteGuard: Jinja2's own message for this operation, if not UndefinedError's
	call  bool   // siteGuard: of a value about to be called
	text  bool   // a lookup that is printed: an undefined value prints as nothing, with a warning
}

// undefinedSites are the sites of one expansion's templates. The filter finds its site by
// index (the filter's first argument): gonja evaluates filter arguments but passes no node.
type undefinedSites struct {
	mu     sync.RWMutex
	list   []*undefinedSite
	macros map[any]bool // macros rewritten when parsed, not to be rewritten again
}

func newUndefinedSites() *undefinedSites {
	return &undefinedSites{macros: map[any]bool{}}
}

func (s *undefinedSites) add(site *undefinedSite) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = append(s.list, site)
	return len(s.list) - 1
}

func (s *undefinedSites) get(i int) *undefinedSite {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i < 0 || i >= len(s.list) {
		return nil
	}

	return s.list[i]
}

// firstRewrite reports whether macro m is seen for the first time.
func (s *undefinedSites) firstRewrite(m any) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.macros[m] {
		return false
	}

	s.macros[m] = true
	return true
}

// undefinedFilter is the filter the rewrite inserts at every site: args are the site's
// index and, for an item, the key.
const undefinedFilter = "__lxd_deploy_undefined__"

func undefinedFilterFunction(e *exec.Evaluator, in *exec.Value, params *exec.VarArgs) *exec.Value {
	b := budgetOf(e.Environment.Context)
	if b == nil || b.sites == nil || len(params.Args) == 0 {
		return in
	}

	site := b.sites.get(params.Args[0].Integer())
	if site == nil {
		return in
	}

	switch site.kind {
	case siteName, siteCallee:
		v, ok := e.Environment.Context.Get(site.name)
		if !ok {
			info := undefinedInfo{name: site.name, expr: site.expr, file: site.file, line: site.line}
			if site.kind == siteCallee {
				return b.failingCall(site, &info)
			}

			return b.maybeText(site, newUndefined(info))
		}

		value := exec.ToValue(v)
		if u := undefinedOf(value); u != nil && site.kind == siteCallee {
			return b.failingCall(site, u)
		}

		return b.maybeText(site, value) // A name holding an undefined value, printed.
	case siteBlank:
		if undefinedOf(in) != nil {
			return exec.AsValue("")
		}
	case siteAttr, siteItem:
		return b.maybeText(site, lookup(b, site, in, params))
	case siteGuard:
		if u := undefinedOf(in); u != nil {
			if site.call {
				return b.failingCall(site, u)
			}

			return b.undefinedFailure(site, u)
		}
	case siteText:
		if u := undefinedOf(in); u != nil {
			b.warnUndefined(site, u)
			return exec.AsValue("")
		}
	case siteEq:
		if undefinedOf(in) != nil {
			return exec.AsValue(undefinedMarker{})
		}
	case siteParam:
		return newUndefined(undefinedInfo{hint: fmt.Sprintf("parameter %s was not provided", pyRepr(site.name)), name: site.name, expr: site.name, file: site.file, line: site.line})
	case siteDefault:
		return jinjaDefault(in, params)
	case siteTest:
		if in.IsError() {
			return in
		}

		test := exec.NewVarArgs()
		test.Args = params.Args[1:]
		test.KwArgs = params.KwArgs
		return e.ExecuteTestByName(site.name, in, test)
	case siteDefined, siteUndefined:
		if in.IsError() {
			return in
		}

		return exec.AsValue((undefinedOf(in) == nil) == (site.kind == siteDefined))
	}

	return in
}

// maybeText prints an undefined value that a printed lookup found as nothing.
func (b *jinjaBudget) maybeText(site *undefinedSite, v *exec.Value) *exec.Value {
	if !site.text {
		return v
	}

	if u := undefinedOf(v); u != nil {
		b.warnUndefined(site, u)
		return exec.AsValue("")
	}

	return v
}

// lookup is Jinja2's getattr (x.attr) and getitem (x[key]): the attribute, else the item
// (or the other way round), else an undefined value; of an undefined value, an error.
func lookup(b *jinjaBudget, site *undefinedSite, in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}

	if u := undefinedOf(in); u != nil {
		return b.undefinedFailure(site, u)
	}

	var key any
	switch {
	case site.kind == siteAttr && site.isIdx:
		key = site.index
	case site.kind == siteAttr:
		key = site.name
	case len(params.Args) > 1 && params.Args[1].IsString():
		key = params.Args[1].String()
	case len(params.Args) > 1 && params.Args[1].IsInteger():
		key = params.Args[1].Integer()
	case len(params.Args) > 1:
		key = params.Args[1]
	}

	info := undefinedInfo{hasObj: true, obj: in, name: key, expr: site.expr, file: site.file, line: site.line}
	if in.IsNil() {
		return newUndefined(info)
	}

	name, isName := key.(string)
	_, isIndex := key.(int)
	if !isName && !isIndex {
		return newUndefined(info) // None, a float, a list...: no such key here.
	}

	var v *exec.Value
	found := false
	if site.kind == siteAttr && isName {
		v, found = in.GetAttribute(name)
	}

	if !found {
		v, found = in.GetItem(key)
	}

	if !found && isName && site.kind == siteItem {
		v, found = in.GetAttribute(name)
	}

	if !found || v == nil {
		return newUndefined(info)
	}

	return v
}

// jinjaDefault is Jinja2's default filter: the default (or "") for an undefined value, or
// with boolean true for any false value; None stays None.
func jinjaDefault(in *exec.Value, params *exec.VarArgs) *exec.Value {
	if in.IsError() {
		return in
	}

	def := exec.AsValue("")
	if len(params.Args) > 1 {
		def = params.Args[1]
	} else if v, ok := params.KwArgs["default_value"]; ok {
		def = v
	} else if v, ok := params.KwArgs["default"]; ok {
		def = v
	}

	boolean := false
	if len(params.Args) > 2 {
		boolean = params.Args[2].IsTrue()
	} else if v, ok := params.KwArgs["boolean"]; ok {
		boolean = v.IsTrue()
	}

	if undefinedOf(in) != nil || (boolean && !in.IsTrue()) {
		return def
	}

	return in
}

// undefinedFailure is the error of using an undefined value where Jinja2 refuses it. The
// budget keeps it, so that the render's error can be reported as it is, naming the file
// and line, instead of through gonja's wrapping.
func (b *jinjaBudget) undefinedFailure(site *undefinedSite, u *undefinedInfo) *exec.Value {
	msg := u.message()
	if site.msg != "" {
		msg = site.msg
	}

	err := &undefinedError{file: site.file, line: site.line, msg: msg, hint: undefinedAdvice(u)}
	b.mu.Lock()
	b.failures = append(b.failures, err)
	b.mu.Unlock()
	return exec.AsValue(err)
}

// failingCall is an undefined value about to be called: a function that fails when
// called, since gonja reports a value that is not a function without its cause.
func (b *jinjaBudget) failingCall(site *undefinedSite, u *undefinedInfo) *exec.Value {
	return exec.AsValue(func(*exec.VarArgs) *exec.Value {
		return b.undefinedFailure(site, u)
	})
}

// undefinedAdvice says what to do about an undefined value that was used.
func undefinedAdvice(u *undefinedInfo) string {
	if u.hint != "" {
		return "pass it, or give the parameter a default"
	}

	if !u.hasObj {
		return "templates see env, properties and imports, and what they set or import themselves"
	}

	return `test an optional value with "is defined" or "| default(...)", or give it a default in the template's schema`
}

// failure returns the undefined error that err (a render's error) carries, or nil.
func (b *jinjaBudget) failure(err error) *undefinedError {
	b.mu.Lock()
	defer b.mu.Unlock()
	text := err.Error()
	for i := len(b.failures) - 1; i >= 0; i-- {
		if strings.Contains(text, b.failures[i].Error()) {
			return b.failures[i]
		}
	}

	return nil
}

// warnUndefined records that an undefined value was rendered as nothing, once per place.
func (b *jinjaBudget) warnUndefined(site *undefinedSite, u *undefinedInfo) {
	expr := u.expr
	if expr == "" {
		expr = "a value"
	}

	msg := expr + " is undefined"
	if u.hasObj || u.hint != "" {
		msg += " (" + u.message() + ")"
	}

	if u.file != "" && (u.file != site.file || u.line != site.line) {
		msg += fmt.Sprintf(" since %s:%d", u.file, u.line)
	}

	msg += `, rendered as empty text: give it a default (| default(...)) or test it (is defined)`
	w := Warning{File: site.file, Line: site.line, Message: msg}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, seen := range b.warnings {
		if seen == w {
			return
		}
	}

	b.warnings = append(b.warnings, w)
}
