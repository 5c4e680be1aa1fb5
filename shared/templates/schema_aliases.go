package templates

import (
	"fmt"

	"go.yaml.in/yaml/v3"
)

// typeAliasNames are the type names Deployment Manager's early schemas used that JSON
// Schema does not know, and the JSON Schema types they meant. Any other unknown type stays
// an error (the metaschema refuses it).
var typeAliasNames = map[string]string{"int": "integer", "bool": "boolean", "float": "number"}

// subschemaKeys are the JSON Schema keywords whose value is a schema, a list of schemas, or
// a mapping of names to schemas: where a "type" keyword can be. Other values (a default,
// an enum, an example) are data, and a "type" key in them is left alone.
var (
	schemaValued = map[string]bool{"items": true, "additionalItems": true, "additionalProperties": true, "not": true, "contains": true, "propertyNames": true, "if": true, "then": true, "else": true}
	schemaLists  = map[string]bool{"allOf": true, "anyOf": true, "oneOf": true, "items": true}
	schemaMaps   = map[string]bool{"properties": true, "patternProperties": true, "definitions": true, "$defs": true, "dependencies": true}
)

// jsonTypes are JSON Schema's types.
var jsonTypes = map[string]bool{"string": true, "integer": true, "number": true, "boolean": true, "object": true, "array": true, "null": true}

// typeAliases rewrites the type aliases of a schema (a YAML mapping node) in place and
// returns a warning for each, naming the file and line. Another unknown type is an error
// naming the file and line too (the metaschema's own error does not say where).
func typeAliases(file string, n *yaml.Node) ([]Warning, error) {
	var warnings []Warning
	var unknown error
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if n.Kind != yaml.MappingNode {
			return
		}

		for i := 0; i+1 < len(n.Content); i += 2 {
			key, value := n.Content[i].Value, n.Content[i+1]
			switch {
			case key == "type":
				types := []*yaml.Node{value}
				if value.Kind == yaml.SequenceNode {
					types = value.Content
				}

				for _, t := range types {
					want, alias := typeAliasNames[t.Value]
					if t.Kind == yaml.ScalarNode && !alias && !jsonTypes[t.Value] && unknown == nil {
						unknown = fmt.Errorf("%s:%d: type %q is not a JSON Schema type: use string, integer, number, boolean, object, array or null", file, t.Line, t.Value)
					}

					if t.Kind == yaml.ScalarNode && alias {
						warnings = append(warnings, Warning{File: file, Line: t.Line, Message: fmt.Sprintf("type %q is not a JSON Schema type: read as %q (a Deployment Manager alias); write %s", t.Value, want, want)})
						t.Value = want
					}
				}
			case schemaMaps[key] && value.Kind == yaml.MappingNode:
				for j := 1; j < len(value.Content); j += 2 {
					walk(value.Content[j])
				}
			case schemaLists[key] && value.Kind == yaml.SequenceNode:
				for _, item := range value.Content {
					walk(item)
				}
			case schemaValued[key]:
				walk(value)
			}
		}
	}

	walk(n)
	return warnings, unknown
}
