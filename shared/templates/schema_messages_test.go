package templates

import (
	"encoding/json"
	"errors"
	osexec "os/exec"
	"strings"
	"testing"
)

// schemaMessageCases are a property schema and a value that breaks it; jsonschema's message
// must start ours (composite rules add which branch failed and why).
var schemaMessageCases = []struct {
	schema map[string]any
	value  any
}{
	{map[string]any{"type": "integer"}, "80"},
	{map[string]any{"type": []any{"integer", "null"}}, "80"},
	{map[string]any{"type": "string"}, 3},
	{map[string]any{"type": "string"}, 1.5},
	{map[string]any{"type": "string"}, true},
	{map[string]any{"type": "string"}, []any{"a", 1}},
	{map[string]any{"type": "string"}, map[string]any{"a": 1}},
	{map[string]any{"minimum": 1}, 0},
	{map[string]any{"maximum": 3}, 5},
	{map[string]any{"maximum": 3, "exclusiveMaximum": true}, 3},
	{map[string]any{"minimum": 3, "exclusiveMinimum": true}, 3},
	{map[string]any{"multipleOf": 2}, 7},
	{map[string]any{"minLength": 3}, "ab"},
	{map[string]any{"maxLength": 3}, "abcd"},
	{map[string]any{"pattern": "^[0-9]+$"}, "abc"},
	{map[string]any{"enum": []any{"a", "b"}}, "c"},
	{map[string]any{"minItems": 2}, []any{1}},
	{map[string]any{"maxItems": 1}, []any{1, 2}},
	{map[string]any{"uniqueItems": true}, []any{1, 1}},
	{map[string]any{"minProperties": 1}, map[string]any{}},
	{map[string]any{"minProperties": 2}, map[string]any{"a": 1}},
	{map[string]any{"minItems": 1}, []any{}},
	{map[string]any{"minLength": 1}, ""},
	{map[string]any{"maxItems": 0}, []any{1}},
	{map[string]any{"not": map[string]any{"type": "string"}}, "x"},
	{map[string]any{"anyOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "boolean"}}}, "x"},
	{map[string]any{"oneOf": []any{map[string]any{"type": "integer"}, map[string]any{"type": "boolean"}}}, "x"},
}

// ourSchemaMessage is the message of the one problem of value against a property schema.
func ourSchemaMessage(t *testing.T, prop map[string]any, value any) string {
	t.Helper()
	data, err := json.Marshal(map[string]any{"properties": map[string]any{"p": prop}})
	if err != nil {
		t.Fatal(err)
	}

	s, _, err := parseSchema("t.schema", data)
	if err != nil {
		t.Fatal(err)
	}

	_, err = s.apply(map[string]any{"p": value}, where{})
	var ee *ExpandError
	if !errors.As(err, &ee) || len(ee.Problems) != 1 {
		t.Fatalf("%v against %v: %v", value, prop, err)
	}

	msg := ee.Problems[0].Message
	return msg[:strings.LastIndex(msg, " (schema rule ")]
}

// TestSchemaMessagesAgainstJsonschema compares the messages with Python's jsonschema
// (Draft 4, as Deployment Manager), where python3-jsonschema is installed.
func TestSchemaMessagesAgainstJsonschema(t *testing.T) {
	python, err := osexec.LookPath("python3")
	if err == nil {
		err = osexec.Command(python, "-c", "import jsonschema").Run()
	}

	if err != nil {
		t.Skipf("python3-jsonschema is not installed (apt-get install python3-jsonschema to compare with it): %v", err)
	}

	type pair struct {
		Schema map[string]any `json:"schema"`
		Value  any            `json:"value"`
	}

	pairs := []pair{}
	for _, c := range schemaMessageCases {
		pairs = append(pairs, pair{c.schema, c.value})
	}

	in, err := json.Marshal(pairs)
	if err != nil {
		t.Fatal(err)
	}

	script := `
import json, sys, jsonschema
out = []
for c in json.load(sys.stdin):
    errs = list(jsonschema.Draft4Validator(c["schema"]).iter_errors(c["value"]))
    out.append(errs[0].message if errs else "")
json.dump(out, sys.stdout)
`
	cmd := osexec.Command(python, "-c", script)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3: %v", err)
	}

	var want []string
	err = json.Unmarshal(out, &want)
	if err != nil {
		t.Fatal(err)
	}

	for i, c := range schemaMessageCases {
		got := ourSchemaMessage(t, c.schema, c.value)
		if !strings.HasPrefix(got, want[i]) {
			t.Errorf("%v against %v: got %q, jsonschema says %q", c.value, c.schema, got, want[i])
		}
	}
}
