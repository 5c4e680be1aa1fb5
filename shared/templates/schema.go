package templates

import (
	"errors"
	"fmt"
	"sort"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"
)

// schema is a template's schema (<template>.schema, seed 000): info, imports, required and
// properties as JSON Schema (draft 4 unless it says otherwise, as Deployment Manager's
// were). It fills defaults in and validates a template's properties before expansion.
type schema struct {
	file       string
	properties map[string]any // "properties": name -> JSON Schema, for defaults
	open       bool           // additionalProperties allows undeclared properties
	compiled   *jsonschema.Schema
	raw        map[string]any // the JSON Schema as written, for messages (schema_messages.go)
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

	s, warnings, err := parseSchema(file, data)
	e.warnings = append(e.warnings, warnings...)
	if err != nil {
		return nil, &ExpandError{Template: t.key, Resource: w.resource, Msg: err.Error()}
	}

	e.schemas[file] = s
	return s, nil
}

// parseSchema reads a schema file. Deployment Manager's early schemas wrote "type: int"
// (and bool, float), which JSON Schema refuses: those are read as integer, boolean and
// number, each with a warning naming the file and line (see typeAliases).
func parseSchema(file string, data []byte) (*schema, []Warning, error) {
	var node yaml.Node
	err := yaml.Unmarshal(data, &node)
	if err != nil {
		return nil, nil, fmt.Errorf("%s is not valid YAML: %v", file, err)
	}

	var warnings []Warning
	if len(node.Content) > 0 {
		warnings, err = typeAliases(file, node.Content[0])
		if err != nil {
			return nil, warnings, err
		}
	}

	var raw any
	err = node.Decode(&raw)
	if err != nil {
		return nil, warnings, fmt.Errorf("%s is not valid YAML: %v", file, err)
	}

	doc, err := normalize(raw)
	if err != nil {
		return nil, warnings, fmt.Errorf("%s: %v", file, err)
	}

	top, ok := doc.(map[string]any)
	if doc != nil && !ok {
		return nil, warnings, fmt.Errorf("%s must be a mapping (info, imports, required, properties), got %s", file, typeName(doc))
	}

	js := map[string]any{"type": "object"}
	for k, v := range top {
		if !schemaKeys[k] {
			js[k] = v
		}
	}

	s := &schema{file: file, raw: js}
	if top["properties"] != nil {
		s.properties, ok = top["properties"].(map[string]any)
		if !ok {
			return nil, warnings, fmt.Errorf("%s: properties must be a mapping of property name to JSON Schema", file)
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
		return nil, warnings, fmt.Errorf("%s is not a valid schema: %v", file, err)
	}

	s.compiled, err = c.Compile("mem:///schema.json")
	if err != nil {
		return nil, warnings, fmt.Errorf("%s is not a valid JSON Schema: %v", file, err)
	}

	return s, warnings, nil
}

// noLoader refuses every $ref outside the schema itself.
type noLoader struct{}

func (noLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schemas cannot refer to %s: keep definitions inside the schema", url)
}

// apply fills the schema's defaults in (without touching props) and validates the result.
// Every violation is reported, undeclared properties included, not just the first.
func (s *schema) apply(props map[string]any, w where) (map[string]any, error) {
	problems := []Problem{}
	if !s.open {
		for _, name := range sortedKeys(props) {
			_, declared := s.properties[name]
			if !declared {
				problems = append(problems, s.problem(w, name, "additionalProperties", fmt.Sprintf("is not declared by %s (schema rule \"additionalProperties\"): remove it, fix its spelling, or declare it in the schema", s.file)))
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
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return nil, w.errorf("%s: %v", s.file, err)
		}

		problems = append(problems, s.translate(ve, out, w)...)
	}

	return out, s.failure(problems, w)
}

func (s *schema) problem(w where, path string, rule string, msg string) Problem {
	return Problem{Template: w.template, Resource: w.resource, Property: path, Rule: rule, Schema: s.file, Message: msg}
}

// failure is the error of a resource's schema problems, sorted by property, or nil.
func (s *schema) failure(problems []Problem, w where) error {
	if len(problems) == 0 {
		return nil
	}

	sort.SliceStable(problems, func(i, j int) bool {
		if problems[i].Property != problems[j].Property {
			return problems[i].Property < problems[j].Property
		}

		return problems[i].Message < problems[j].Message
	})

	if len(problems) == 1 {
		p := problems[0]
		return &ExpandError{Template: w.template, Resource: w.resource, Path: p.Property, Msg: p.Message, Problems: problems}
	}

	return &ExpandError{Template: w.template, Resource: w.resource, Msg: fmt.Sprintf("properties do not match %s (%d problems)", s.file, len(problems)), Problems: problems}
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

// translate lists the violations of a validation error, one problem each, in the words of
// Python's jsonschema (see schema_messages.go).
func (s *schema) translate(ve *jsonschema.ValidationError, instance any, w where) []Problem {
	problems := []Problem{}
	for _, v := range s.describe(ve, instance) {
		path := dottedPath(v.path)
		if v.rule == "required" {
			problems = append(problems, s.problem(w, path, "required", fmt.Sprintf("is required by %s but was not given (schema rule \"required\")", s.file)))
			continue
		}

		problems = append(problems, s.problem(w, path, v.rule, fmt.Sprintf("%s (schema rule %q of %s)", v.msg, v.rule, s.file)))
	}

	if len(problems) == 0 {
		problems = append(problems, s.problem(w, "", "", fmt.Sprintf("%s: %v", s.file, ve)))
	}

	return problems
}
