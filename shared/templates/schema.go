package templates

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// schema is a template's schema (<template>.schema, seed 000): info, imports, required and
// properties as JSON Schema (draft 4 unless it says otherwise, as Deployment Manager's
// were). It fills defaults in and validates a template's properties before expansion.
type schema struct {
	file       string
	properties map[string]any // "properties": name -> JSON Schema, for defaults
	open       bool           // additionalProperties allows undeclared properties
	compiled   *jsonschema.Schema
}

// schemaKeys are the DM keys that are not JSON Schema and are left out of validation.
var schemaKeys = map[string]bool{"info": true, "imports": true}

// schema returns the schema of template t, or nil when it has none.
func (e *expander) schema(t *template, w where) (*schema, error) {
	file := t.key + ".schema"
	s, ok := e.schemas[file]
	if ok {
		return s, nil
	}

	data, ok := e.imports[file]
	if !ok {
		e.schemas[file] = nil
		return nil, nil
	}

	s, err := parseSchema(file, data)
	if err != nil {
		return nil, &ExpandError{Template: t.key, Resource: w.resource, Msg: err.Error()}
	}

	e.schemas[file] = s
	return s, nil
}

func parseSchema(file string, data []byte) (*schema, error) {
	doc, err := parseYAML(data)
	if err != nil {
		return nil, fmt.Errorf("%s is not valid YAML: %v", file, err)
	}

	top, ok := doc.(map[string]any)
	if doc != nil && !ok {
		return nil, fmt.Errorf("%s must be a mapping (info, imports, required, properties), got %s", file, typeName(doc))
	}

	js := map[string]any{"type": "object"}
	for k, v := range top {
		if !schemaKeys[k] {
			js[k] = v
		}
	}

	s := &schema{file: file}
	if top["properties"] != nil {
		s.properties, ok = top["properties"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("%s: properties must be a mapping of property name to JSON Schema", file)
		}
	}

	// Undeclared properties are refused by default, like seed 003's "only fields specified
	// in the artifact's config"; a schema can open itself with additionalProperties.
	additional, set := top["additionalProperties"]
	s.open = set && additional != false
	delete(js, "additionalProperties")
	if set && additional != false && additional != true {
		js["additionalProperties"] = additional // A schema for the extra properties.
	}

	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft4)
	c.UseLoader(noLoader{}) // A schema must not make the expander read files or URLs.
	err = c.AddResource("mem:///schema.json", js)
	if err != nil {
		return nil, fmt.Errorf("%s is not a valid schema: %v", file, err)
	}

	s.compiled, err = c.Compile("mem:///schema.json")
	if err != nil {
		return nil, fmt.Errorf("%s is not a valid JSON Schema: %v", file, err)
	}

	return s, nil
}

// noLoader refuses every $ref outside the schema itself.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schemas cannot refer to %s: keep definitions inside the schema", url)
}

// apply fills the schema's defaults in (without touching props) and validates the result.
func (s *schema) apply(props map[string]any, w where) (map[string]any, error) {
	if !s.open {
		for _, name := range sortedKeys(props) {
			_, declared := s.properties[name]
			if !declared {
				return nil, w.propertyErrorf(name, "is not declared by %s (schema rule \"additionalProperties\"): remove it, fix its spelling, or declare it in the schema", s.file)
			}
		}
	}

	out, _ := deepCopy(props).(map[string]any)
	if out == nil {
		out = map[string]any{}
	}

	fillDefaults(out, s.properties)
	err := s.compiled.Validate(out)
	if err != nil {
		return nil, s.translate(err, w)
	}

	return out, nil
}

// fillDefaults sets each missing property that has a default, recursing into objects.
func fillDefaults(instance map[string]any, properties map[string]any) {
	for name, sub := range properties {
		sm, ok := sub.(map[string]any)
		if !ok {
			continue
		}

		_, has := instance[name]
		d, hasDefault := sm["default"]
		if !has && hasDefault {
			instance[name] = deepCopy(d)
		}

		child, isMap := instance[name].(map[string]any)
		nested, hasNested := sm["properties"].(map[string]any)
		if isMap && hasNested {
			fillDefaults(child, nested)
		}
	}
}

// translate turns a validation error into one ExpandError naming the property and the rule.
func (s *schema) translate(err error, w where) error {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return w.errorf("%s: %v", s.file, err)
	}

	type problem struct{ path, msg string }
	printer := message.NewPrinter(language.English)
	problems := []problem{}
	var walk func(*jsonschema.ValidationError)
	walk = func(v *jsonschema.ValidationError) {
		if len(v.Causes) > 0 {
			for _, c := range v.Causes {
				walk(c)
			}

			return
		}

		path := dottedPath(v.InstanceLocation)
		rule := strings.Join(v.ErrorKind.KeywordPath(), "/")
		req, ok := v.ErrorKind.(*kind.Required)
		if ok {
			for _, missing := range req.Missing {
				problems = append(problems, problem{dottedPath(append(append([]string{}, v.InstanceLocation...), missing)), fmt.Sprintf("is required by %s but was not given (schema rule \"required\")", s.file)})
			}

			return
		}

		problems = append(problems, problem{path, fmt.Sprintf("%s (schema rule %q of %s)", v.ErrorKind.LocalizedString(printer), rule, s.file)})
	}

	walk(ve)
	if len(problems) == 0 {
		return w.errorf("%s: %v", s.file, err)
	}

	sort.Slice(problems, func(i, j int) bool {
		if problems[i].path != problems[j].path {
			return problems[i].path < problems[j].path
		}

		return problems[i].msg < problems[j].msg
	})

	msg := problems[0].msg
	if len(problems) > 1 {
		msg += fmt.Sprintf(" (and %d more problems)", len(problems)-1)
	}

	return w.propertyErrorf(problems[0].path, "%s", msg)
}
