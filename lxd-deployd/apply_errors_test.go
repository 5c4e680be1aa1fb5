package main

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// metadataOf decodes an answer's metadata into target.
func metadataOf(t *testing.T, answer map[string]any, target any) {
	t.Helper()
	data, err := json.Marshal(answer["metadata"])
	if err == nil {
		err = json.Unmarshal(data, target)
	}

	if err != nil {
		t.Fatal(err)
	}
}

const schemaJinja = `resources:
- name: {{ env['name'] }}
  type: shape
  properties:
    instance_template: {source: {type: image, alias: {{ properties['image'] }}}}
    scaling_maximum: {{ properties['size'] }}
`

// A config with several schema violations gets a 400 whose metadata lists every one, and
// changes nothing; a schema's DM type alias is a warning in the dry-run plan and in the
// answer of the create and of a PUT.
func TestTemplateErrorsAndWarnings(t *testing.T) {
	a := newTestAPI(t)
	body := func(name string, schema string, props string) string {
		fields := map[string]any{
			"template":         "resources:\n- name: web\n  type: web.jinja\n  properties: " + props + "\n",
			"template_imports": map[string]string{"web.jinja": schemaJinja, "web.jinja.schema": schema},
		}

		if name != "" {
			fields["name"] = name // POST only: a PUT has no name.
		}

		data, err := json.Marshal(fields)
		if err != nil {
			t.Fatal(err)
		}

		return string(data)
	}

	strict := "required: [image]\nproperties:\n  image: {type: string}\n  size: {type: integer, minimum: 1}\n"
	answer := a.expect("POST", "/1.0/deployments", body("shop", strict, "{size: 0, colour: blue}"), 400, "properties do not match web.jinja.schema (3 problems)")
	var details api.DeploymentTemplateError
	metadataOf(t, answer, &details)
	rules := []string{}
	for _, p := range details.Problems {
		rules = append(rules, p.Property+"/"+p.Rule+"/"+p.Schema)
	}

	want := []string{"colour/additionalProperties/web.jinja.schema", "image/required/web.jinja.schema", "size/minimum/web.jinja.schema"}
	if details.Template != "web.jinja" || details.Resource != "web" || !reflect.DeepEqual(rules, want) {
		t.Errorf("error metadata = %+v, want problems %v", details, want)
	}

	a.expect("GET", "/1.0/deployments/shop", "", 404, "")

	// One problem is a list of one.
	answer = a.expect("POST", "/1.0/deployments", body("shop", strict, "{image: debian/12, size: x}"), 400, `property "size": 'x' is not of type 'integer'`)
	details = api.DeploymentTemplateError{}
	metadataOf(t, answer, &details)
	if len(details.Problems) != 1 || details.Problems[0].Property != "size" || details.Problems[0].Rule != "type" {
		t.Errorf("one problem: %+v", details)
	}

	// type: int is read as integer, with a warning naming the file and line.
	aliased := "properties:\n  image: {type: string}\n  size:\n    type: int\n"
	warning := api.DeploymentTemplateWarning{File: "web.jinja.schema", Line: 4, Message: `type "int" is not a JSON Schema type: read as "integer" (a Deployment Manager alias); write integer`}
	var plan api.DeploymentTemplatePlan
	metadataOf(t, a.expect("POST", "/1.0/deployments?dry-run=1", body("shop", aliased, "{image: debian/12, size: 2}"), 200, ""), &plan)
	if !reflect.DeepEqual(plan.Warnings, []api.DeploymentTemplateWarning{warning}) || len(plan.Create) != 1 {
		t.Errorf("dry-run plan warnings = %+v", plan.Warnings)
	}

	var created api.DeploymentCreated
	metadataOf(t, a.expect("POST", "/1.0/deployments", body("shop", aliased, "{image: debian/12, size: 2}"), 201, ""), &created)
	if created.Secret == "" || !reflect.DeepEqual(created.Warnings, []api.DeploymentTemplateWarning{warning}) {
		t.Errorf("create answer = %+v", created)
	}

	var result api.DeploymentTemplateResult
	metadataOf(t, a.expect("PUT", "/1.0/deployments/shop", body("", aliased, "{image: debian/12, size: 3}"), 200, ""), &result)
	if !reflect.DeepEqual(result.Warnings, []api.DeploymentTemplateWarning{warning}) {
		t.Errorf("PUT answer = %+v", result)
	}

	// Unknown types stay refused.
	a.expect("PUT", "/1.0/deployments/shop", body("", "properties:\n  size: {type: str}\n", "{size: 3}"), 400, `web.jinja.schema:2: type "str" is not a JSON Schema type`)
}
