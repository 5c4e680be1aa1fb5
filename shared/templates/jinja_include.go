package templates

import (
	"errors"
	"fmt"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// includeStructure is gonja's {% include %}, which parses the included file when it runs,
// plus what the engine does to every parsed template: the sandbox's limits and, unless
// strict, Jinja2's Undefined. gonja's own include renders the file as parsed.
type includeStructure struct {
	location      *tokens.Token
	filename      nodes.Expression
	ignoreMissing bool
}

func (ics *includeStructure) Position() *tokens.Token {
	return ics.location
}

// String is gonja's, which errors quote.
func (ics *includeStructure) String() string {
	t := ics.Position()
	return fmt.Sprintf("IncludeControlStructure(Filename=%s Line=%d Col=%d)", ics.filename, t.Line, t.Col)
}

// Execute is gonja's include with the parsed file rewritten before it renders.
func (ics *includeStructure) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	filenameValue := r.Eval(ics.filename)
	if filenameValue.IsError() {
		return fmt.Errorf("Unable to evaluate filename: %w", filenameValue)
	}

	filename, err := r.Loader.Resolve(filenameValue.String())
	if err != nil {
		if ics.ignoreMissing {
			return nil
		}

		return fmt.Errorf("failed to resolve filename: %s", err)
	}

	loader, err := r.Loader.Inherit(filename)
	if err != nil {
		if ics.ignoreMissing {
			return nil
		}

		return fmt.Errorf("failed to inherit loader: %s", err)
	}

	included, err := exec.NewTemplate(filename, r.Config, loader, r.Environment)
	if err != nil {
		if ics.ignoreMissing {
			return nil
		}

		return fmt.Errorf("unable to load template '%s': %s", filename, err)
	}

	sandboxTree(included.Root())
	l, _ := loader.(*importLoader)
	if l != nil && l.sites != nil {
		rewriteUndefined(included.Root(), l.sites, l.file)
	}

	return exec.NewRenderer(r.Environment, r.Output, r.Config.Inherit(), loader, included).Execute()
}

// includeParser is gonja's: include EXPR [ignore missing] [with context|without context].
func includeParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	cs := &includeStructure{location: p.Current()}
	filename, err := args.ParseExpression()
	if err != nil {
		return nil, err
	}

	cs.filename = filename
	if args.MatchName("ignore") != nil {
		if args.MatchName("missing") != nil {
			cs.ignoreMissing = true
		} else {
			args.Stream().Backup()
		}
	}

	if tok := args.MatchName("with", "without"); tok != nil {
		if args.MatchName("context") == nil {
			args.Stream().Backup()
		}
	}

	if !args.End() {
		return nil, args.Error("Malformed 'include'-tag args.", nil)
	}

	return cs, nil
}

// sandboxMethods are gonja's methods, with the list methods refusing an undefined value
// (an undefined name holding a list is empty, but l.append(x) on it is Jinja2's error).
func sandboxMethods() exec.Methods {
	m := builtins.Methods
	list := map[string]exec.Method[[]any]{}
	for _, name := range []string{"append", "reverse", "copy"} {
		method, ok := builtins.Methods.List.Get(name)
		if !ok {
			continue
		}

		list[name] = func(self []any, selfValue *exec.Value, arguments *exec.VarArgs) (any, error) {
			if u := undefinedOf(selfValue); u != nil {
				return nil, errors.New(u.message())
			}

			return method(self, selfValue, arguments)
		}
	}

	m.List = exec.NewMethodSet(list)
	return m
}
