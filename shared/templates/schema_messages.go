package templates

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema violations in the words of Python's jsonschema, which Deployment Manager validated
// with: the value quoted ('a string' is not of type 'integer'), shortened when long, and
// never for a secret (a property whose name says it is one, or that its schema marks
// secret); composite rules (not, anyOf, oneOf, allOf) say which rule failed and why.

// maxQuoted is how much of a value a message quotes.
const maxQuoted = 60

// secretWords in a property's name (any part of its path) make it secret.
var secretWords = []string{"password", "secret", "token", "key"}

// violation describes one schema violation for the problem list: its rule and message.
type violation struct {
	path []string
	rule string
	msg  string
}

// describe turns a validation error into violations: a leaf is one, a composite rule is
// one that says why its branches failed; required lists each missing property.
func (s *schema) describe(v *jsonschema.ValidationError, instance any) []violation {
	switch k := v.ErrorKind.(type) {
	case *kind.Schema, *kind.Group:
		out := []violation{}
		for _, c := range v.Causes {
			out = append(out, s.describe(c, instance)...)
		}

		return out
	case *kind.Required:
		out := []violation{}
		for _, missing := range k.Missing {
			out = append(out, violation{path: append(append([]string{}, v.InstanceLocation...), missing), rule: "required"})
		}

		return out
	case *kind.Not:
		sub := schemaAt(s.raw, v.SchemaURL+"/not")
		return []violation{{path: v.InstanceLocation, rule: "not", msg: fmt.Sprintf("%s should not be valid under %s", s.quote(v, instance), pyValue(sub, maxQuoted))}}
	case *kind.AnyOf:
		return []violation{{path: v.InstanceLocation, rule: "anyOf", msg: fmt.Sprintf("%s is not valid under any of the given schemas", s.quote(v, instance)) + s.branches(v, "anyOf", instance)}}
	case *kind.OneOf:
		if len(k.Subschemas) > 1 {
			return []violation{{path: v.InstanceLocation, rule: "oneOf", msg: fmt.Sprintf("%s is valid under each of oneOf[%d] and oneOf[%d]: it must match exactly one", s.quote(v, instance), k.Subschemas[0], k.Subschemas[1])}}
		}

		return []violation{{path: v.InstanceLocation, rule: "oneOf", msg: fmt.Sprintf("%s is not valid under any of the given schemas", s.quote(v, instance)) + s.branches(v, "oneOf", instance)}}
	case *kind.AllOf:
		return []violation{{path: v.InstanceLocation, rule: "allOf", msg: fmt.Sprintf("%s is not valid under all of the given schemas", s.quote(v, instance)) + s.branches(v, "allOf", instance)}}
	}

	return []violation{{path: v.InstanceLocation, rule: strings.Join(v.ErrorKind.KeywordPath(), "/"), msg: s.leaf(v, instance)}}
}

// branches says why each failing branch of a composite rule failed: ": anyOf[0]: 'x' is
// not of type 'integer'; anyOf[1]: ...".
func (s *schema) branches(v *jsonschema.ValidationError, rule string, instance any) string {
	reasons := []string{}
	for _, c := range v.Causes {
		label := rule
		i := strings.LastIndex(c.SchemaURL, "/"+rule+"/")
		if i >= 0 {
			index := c.SchemaURL[i+len(rule)+2:]
			index, _, _ = strings.Cut(index, "/")
			label = fmt.Sprintf("%s[%s]", rule, index)
		}

		msgs := []string{}
		for _, inner := range s.describe(c, instance) {
			msg := inner.msg
			if inner.rule == "required" {
				msg = fmt.Sprintf("%s is a required property", pyValue(inner.path[len(inner.path)-1], maxQuoted))
			}

			msgs = append(msgs, msg)
		}

		reasons = append(reasons, label+": "+strings.Join(msgs, ", "))
	}

	if len(reasons) == 0 {
		return ""
	}

	return ": " + strings.Join(reasons, "; ")
}

// leaf is jsonschema's message for one keyword's violation.
func (s *schema) leaf(v *jsonschema.ValidationError, instance any) string {
	sub := schemaAt(s.raw, v.SchemaURL)
	keyword := func(name string) string {
		m, _ := sub.(map[string]any)
		return pyValue(m[name], maxQuoted)
	}

	value := s.quote(v, instance)
	switch k := v.ErrorKind.(type) {
	case *kind.Type:
		types := k.Want
		if m, _ := sub.(map[string]any); m != nil {
			if list, ok := m["type"].([]any); ok {
				types = nil // In the schema's order, as jsonschema lists them.
				for _, t := range list {
					types = append(types, fmt.Sprint(t))
				}
			}
		}

		want := make([]string, len(types))
		for i, t := range types {
			want[i] = pyValue(t, maxQuoted)
		}

		return fmt.Sprintf("%s is not of type %s", value, strings.Join(want, ", "))
	case *kind.Enum:
		return fmt.Sprintf("%s is not one of %s", value, keyword("enum"))
	case *kind.Const:
		return fmt.Sprintf("%s was expected", keyword("const"))
	case *kind.Format:
		return fmt.Sprintf("%s is not a %s", value, keyword("format"))
	case *kind.MinProperties:
		if keyword("minProperties") == "1" {
			return fmt.Sprintf("%s should be non-empty", value)
		}

		return fmt.Sprintf("%s does not have enough properties", value)
	case *kind.MaxProperties:
		if keyword("maxProperties") == "0" {
			return fmt.Sprintf("%s is expected to be empty", value)
		}

		return fmt.Sprintf("%s has too many properties", value)
	case *kind.MinItems, *kind.MinLength:
		if keyword("minItems") == "1" || keyword("minLength") == "1" {
			return fmt.Sprintf("%s should be non-empty", value)
		}

		return fmt.Sprintf("%s is too short", value)
	case *kind.MaxItems, *kind.MaxLength:
		if keyword("maxItems") == "0" || keyword("maxLength") == "0" {
			return fmt.Sprintf("%s is expected to be empty", value)
		}

		return fmt.Sprintf("%s is too long", value)
	case *kind.UniqueItems:
		return fmt.Sprintf("%s has non-unique elements", value)
	case *kind.Pattern:
		return fmt.Sprintf("%s does not match %s", value, keyword("pattern"))
	case *kind.Minimum:
		return fmt.Sprintf("%s is less than the minimum of %s", value, keyword("minimum"))
	case *kind.Maximum:
		return fmt.Sprintf("%s is greater than the maximum of %s", value, keyword("maximum"))
	case *kind.ExclusiveMinimum:
		return fmt.Sprintf("%s is less than or equal to the minimum of %s", value, exclusiveLimit(sub, "exclusiveMinimum", "minimum"))
	case *kind.ExclusiveMaximum:
		return fmt.Sprintf("%s is greater than or equal to the maximum of %s", value, exclusiveLimit(sub, "exclusiveMaximum", "maximum"))
	case *kind.MultipleOf:
		return fmt.Sprintf("%s is not a multiple of %s", value, keyword("multipleOf"))
	case *kind.AdditionalProperties:
		names := make([]string, len(k.Properties))
		for i, p := range k.Properties {
			names[i] = pyValue(p, maxQuoted)
		}

		verb := "was"
		if len(names) > 1 {
			verb = "were"
		}

		return fmt.Sprintf("Additional properties are not allowed (%s %s unexpected)", strings.Join(names, ", "), verb)
	case *kind.AdditionalItems:
		return fmt.Sprintf("Additional items are not allowed (%d were unexpected)", k.Count)
	case *kind.Dependency:
		return fmt.Sprintf("%s is a dependency of %s", pyValue(strings.Join(k.Missing, ", "), maxQuoted), pyValue(k.Prop, maxQuoted))
	case *kind.DependentRequired:
		return fmt.Sprintf("%s is a dependency of %s", pyValue(strings.Join(k.Missing, ", "), maxQuoted), pyValue(k.Prop, maxQuoted))
	case *kind.Contains:
		return fmt.Sprintf("%s does not contain items matching the given schema", value)
	case *kind.FalseSchema:
		return fmt.Sprintf("False schema does not allow %s", value)
	}

	return v.ErrorKind.LocalizedString(message.NewPrinter(language.English))
}

// exclusiveLimit is the limit of an exclusive bound: draft 4 writes exclusiveMinimum: true
// beside minimum, later drafts the number itself.
func exclusiveLimit(sub any, exclusive string, bound string) string {
	m, _ := sub.(map[string]any)
	if _, isBool := m[exclusive].(bool); isBool {
		return pyValue(m[bound], maxQuoted)
	}

	return pyValue(m[exclusive], maxQuoted)
}

// quote is the violating value as jsonschema quotes it, or "the value" for a secret.
func (s *schema) quote(v *jsonschema.ValidationError, instance any) string {
	if s.secret(v) {
		return "the value"
	}

	value, ok := valueAt(instance, v.InstanceLocation)
	if !ok {
		return "the value"
	}

	return pyValue(value, maxQuoted)
}

// secret reports whether the value of v must not be quoted: a part of its property path
// names a secret, or a schema on the way to it marks it (secret: true, writeOnly: true,
// format: password).
func (s *schema) secret(v *jsonschema.ValidationError) bool {
	for _, part := range v.InstanceLocation {
		lower := strings.ToLower(part)
		for _, word := range secretWords {
			if strings.Contains(lower, word) {
				return true
			}
		}
	}

	if marksSecret(schemaAt(s.raw, v.SchemaURL)) {
		return true
	}

	cur := any(s.raw)
	for _, part := range v.InstanceLocation {
		m, _ := cur.(map[string]any)
		props, _ := m["properties"].(map[string]any)
		next, ok := props[part]
		if !ok {
			next, ok = m["items"].(map[string]any)
		}

		if !ok {
			next, ok = m["additionalProperties"].(map[string]any)
		}

		if !ok {
			return false
		}

		if marksSecret(next) {
			return true
		}

		cur = next
	}

	return false
}

func marksSecret(schema any) bool {
	m, _ := schema.(map[string]any)
	return m["secret"] == true || m["writeOnly"] == true || m["format"] == "password"
}

// schemaAt resolves a compiled schema's location (mem:///schema.json#/properties/port) in
// the schema as written.
func schemaAt(raw map[string]any, location string) any {
	_, pointer, _ := strings.Cut(location, "#")
	var cur any = raw
	for _, part := range strings.Split(strings.TrimPrefix(pointer, "/"), "/") {
		if part == "" {
			continue
		}

		unescaped, err := url.PathUnescape(part)
		if err == nil {
			part = unescaped
		}

		part = strings.NewReplacer("~1", "/", "~0", "~").Replace(part)
		switch c := cur.(type) {
		case map[string]any:
			cur = c[part]
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil
			}

			cur = c[i]
		default:
			return nil
		}
	}

	return cur
}

// valueAt is the value at a property path of the validated properties.
func valueAt(instance any, path []string) (any, bool) {
	cur := instance
	for _, part := range path {
		switch c := cur.(type) {
		case map[string]any:
			next, ok := c[part]
			if !ok {
				return nil, false
			}

			cur = next
		case []any:
			i, err := strconv.Atoi(part)
			if err != nil || i < 0 || i >= len(c) {
				return nil, false
			}

			cur = c[i]
		default:
			return nil, false
		}
	}

	return cur, true
}

// pyValue is Python's repr of plain data, shortened to about max characters.
func pyValue(v any, max int) string {
	text := pyRepr(v)
	switch t := v.(type) {
	case nil:
		text = "None"
	case bool:
		text = "False"
		if t {
			text = "True"
		}
	case float64:
		text = strconv.FormatFloat(t, 'g', -1, 64)
		if !strings.ContainsAny(text, ".eEn") {
			text += ".0"
		}
	case []any:
		items := make([]string, len(t))
		for i, item := range t {
			items[i] = pyValue(item, max)
		}

		text = "[" + strings.Join(items, ", ") + "]"
	case map[string]any:
		keys := sortedKeys(t)
		items := make([]string, len(keys))
		for i, k := range keys {
			items[i] = pyRepr(k) + ": " + pyValue(t[k], max)
		}

		text = "{" + strings.Join(items, ", ") + "}"
	}

	return shorten(text, max)
}

// shorten cuts text to about max characters, keeping a string's closing quote.
func shorten(text string, max int) string {
	runes := []rune(text)
	if len(runes) <= max {
		return text
	}

	cut := string(runes[:max-4]) + "..."
	if last := runes[len(runes)-1]; last == '\'' || last == '"' || last == ']' || last == '}' {
		cut += string(last)
	}

	return cut
}
