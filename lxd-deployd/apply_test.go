package main

import (
	"encoding/json"
	"net/http"
	"net/url"
	"reflect"
	"sort"
	"testing"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply/applytest"
)

func templateBody(t *testing.T, fields map[string]any, config string) string {
	t.Helper()
	body := map[string]any{"template": config, "template_imports": map[string]string{"app.jinja": applytest.AppJinja}}
	for k, v := range fields {
		body[k] = v
	}

	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}

	return string(data)
}

// shapes returns a deployment's shapes by name, from GET.
func (a *testAPI) shapes(deployment string) map[string]any {
	a.t.Helper()
	d := a.expect("GET", "/1.0/deployments/"+deployment, "", 200, "")["metadata"].(map[string]any)
	return d["deployment_shapes"].(map[string]any)
}

func keysOf(m map[string]any) []string {
	keys := []string{}
	for k := range m {
		keys = append(keys, k)
	}

	sort.Strings(keys)
	return keys
}

func TestTemplateAPI(t *testing.T) {
	a := newTestAPI(t)
	next := applytest.AppConfig("debian/12", "web:5", "api:2")

	phase(t, "a dry-run create makes nothing", func(t *testing.T) {
		// A dry-run create says what it would make and makes nothing.
		plan := a.expect("POST", "/1.0/deployments?dry-run=1", templateBody(t, map[string]any{"name": "shop"}, applytest.AppConfig("busybox", "web:3", "db:1")), 200, "")["metadata"].(map[string]any)
		if create := plan["create"].([]any); len(create) != 2 || create[0].(map[string]any)["name"] != "shop-web" {
			t.Fatalf("dry-run plan: %v", plan)
		}

		if layout := plan["layout"].(map[string]any)["resources"].([]any); len(layout) != 1 || layout[0].(map[string]any)["type"] != "app.jinja" {
			t.Fatalf("dry-run layout: %v", plan["layout"])
		}

		a.expect("GET", "/1.0/deployments/shop", "", 404, "")
	})

	phase(t, "requests that cannot work change nothing", func(t *testing.T) {
		// Requests that cannot work change nothing.
		bad := []struct {
			method, path, body string
			status             int
			want               string
		}{
			{"POST", "/1.0/deployments", templateBody(t, map[string]any{"name": "shop"}, "resources: [{name: x, type: nope.jinja}]"), 400, "nope.jinja"},
			{"POST", "/1.0/deployments", templateBody(t, map[string]any{"name": "shop"}, "resources: [{name: x, type: Service}]"), 400, "x (Service)"},
			{"POST", "/1.0/deployments", templateBody(t, map[string]any{"name": "shop"}, "resources: [{"), 400, "not valid YAML"},
			{"POST", "/1.0/deployments", templateBody(t, map[string]any{"name": "1shop"}, applytest.AppConfig("busybox", "web:3")), 400, "must not start"},
			{"POST", "/1.0/deployments", templateBody(t, map[string]any{"name": "shop", "config": map[string]string{"nope": "x"}}, applytest.AppConfig("busybox", "web:3")), 400, "nope"},
			{"POST", "/1.0/deployments?dry-run=1", `{"name":"shop"}`, 400, "send the config in template"},
			{"POST", "/1.0/deployments", `{"name":"shop","template_imports":{"a":"b"}}`, 400, "send the config in template"},
		}

		for _, tt := range bad {
			a.expect(tt.method, tt.path, tt.body, tt.status, tt.want)
		}

		a.expect("GET", "/1.0/deployments/shop", "", 404, "")
	})

	phase(t, "create from a template", func(t *testing.T) {
		// Create from a template.
		a.expect("POST", "/1.0/deployments", templateBody(t, map[string]any{"name": "shop", "description": "the shop"}, applytest.AppConfig("busybox", "web:3", "db:1")), 201, "")
		shapes := a.shapes("shop")
		if got := keysOf(shapes); !reflect.DeepEqual(got, []string{"shop-db", "shop-web"}) {
			t.Fatalf("shapes after create: %v", got)
		}

		web := shapes["shop-web"].(map[string]any)
		if web["description"] != "web of shop in default" || web["scaling_maximum"] != float64(3) {
			t.Fatalf("shop-web: %v", web)
		}

		// The template fields are write only.
		d := a.expect("GET", "/1.0/deployments/shop", "", 200, "")["metadata"].(map[string]any)
		if _, ok := d["template"]; ok || d["description"] != "the shop" {
			t.Fatalf("deployment: %v", d)
		}

		// A shape made through the shapes API is not the template's.
		a.expect("POST", "/1.0/deployments/shop/shapes", `{"name":"debug","instance_template":{"source":{"type":"image","alias":"busybox"}},"scaling_maximum":1}`, 201, "")
	})

	phase(t, "a dry-run PUT changes nothing", func(t *testing.T) {
		// A dry-run PUT shows the changes and changes nothing.
		plan := a.expect("PUT", "/1.0/deployments/shop?dry-run=1", templateBody(t, map[string]any{"description": "changed"}, next), 200, "")["metadata"].(map[string]any)
		if len(plan["create"].([]any)) != 1 || len(plan["update"].([]any)) != 1 || len(plan["delete"].([]any)) != 1 || plan["unmanaged"].([]any)[0] != "debug" {
			t.Fatalf("dry-run PUT plan: %v", plan)
		}

		changes := plan["update"].([]any)[0].(map[string]any)["changes"].([]any)
		if len(changes) != 2 || changes[0].(map[string]any)["field"] != "instance_template.source.alias" || changes[1].(map[string]any)["new"] != float64(5) {
			t.Fatalf("changes: %v", changes)
		}

		if got := keysOf(a.shapes("shop")); !reflect.DeepEqual(got, []string{"debug", "shop-db", "shop-web"}) {
			t.Fatalf("a dry run changed the shapes: %v", got)
		}
	})

	phase(t, "bad configs on PUT change nothing", func(t *testing.T) {
		// Bad configs on PUT change nothing, not even the deployment's own fields.
		a.expect("PUT", "/1.0/deployments/shop", templateBody(t, map[string]any{"description": "changed"}, "resources: [{name: bad_name, type: shape}]"), 400, "bad_name")
		a.expect("PATCH", "/1.0/deployments/shop", templateBody(t, nil, next), 400, "PATCH does not apply templates")
		a.expect("PUT", "/1.0/deployments/shop?dry-run=1", `{"description":"x"}`, 400, "send the config in template")
		a.expect("PUT", "/1.0/deployments/shop", templateBody(t, map[string]any{"config": map[string]string{"nope": "x"}}, next), 400, "nope")
		if code, _, _ := a.do("PUT", "/1.0/deployments/shop", templateBody(t, nil, next), "If-Match", `"stale"`); code != http.StatusPreconditionFailed {
			t.Fatalf("PUT with a stale ETag: %d", code)
		}

		d := a.expect("GET", "/1.0/deployments/shop", "", 200, "")["metadata"].(map[string]any)
		if d["description"] != "the shop" || len(d["deployment_shapes"].(map[string]any)) != 3 {
			t.Fatalf("refused PUTs changed the deployment: %v", d)
		}
	})

	phase(t, "apply", func(t *testing.T) {
		// Apply: web changes, api appears, db goes, debug stays.
		a.expect("PUT", "/1.0/deployments/shop", templateBody(t, map[string]any{"description": "changed"}, next), 200, "")
		shapes := a.shapes("shop")
		if got := keysOf(shapes); !reflect.DeepEqual(got, []string{"debug", "shop-api", "shop-web"}) {
			t.Fatalf("shapes after PUT: %v", got)
		}

		web := shapes["shop-web"].(map[string]any)
		if web["scaling_maximum"] != float64(5) || web["instance_template"].(map[string]any)["source"].(map[string]any)["alias"] != "debian/12" {
			t.Fatalf("shop-web after PUT: %v", web)
		}

		// A plain PUT leaves the shapes alone.
		a.expect("PUT", "/1.0/deployments/shop", `{"description":"plain"}`, 200, "")
		if got := keysOf(a.shapes("shop")); len(got) != 3 {
			t.Fatalf("a PUT without template changed the shapes: %v", got)
		}
	})

	phase(t, "manifests", func(t *testing.T) {
		// Manifests.
		names := a.expect("GET", "/1.0/deployments/shop/manifests", "", 200, "")["metadata"].([]any)
		if !reflect.DeepEqual(names, []any{"/1.0/deployments/shop/manifests/manifest-1", "/1.0/deployments/shop/manifests/manifest-2"}) {
			t.Fatalf("manifests: %v", names)
		}

		manifests := a.expect("GET", "/1.0/deployments/shop/manifests?recursion=1", "", 200, "")["metadata"].([]any)
		first := manifests[0].(map[string]any)
		if first["cause"] != "create" || first["input_config"] != applytest.AppConfig("busybox", "web:3", "db:1") || first["imports"].(map[string]any)["app.jinja"] != applytest.AppJinja {
			t.Fatalf("manifest-1: %v", first)
		}

		m := a.expect("GET", "/1.0/deployments/shop/manifests/manifest-2", "", 200, "")["metadata"].(map[string]any)
		if m["cause"] != "update" || len(m["expanded_config"].(map[string]any)["resources"].([]any)) != 2 {
			t.Fatalf("manifest-2: %v", m)
		}

		a.expect("GET", "/1.0/deployments/shop/manifests/manifest-9", "", 404, "manifest-9")
		a.expect("GET", "/1.0/deployments/nope/manifests", "", 404, "")
	})

	phase(t, "types", func(t *testing.T) {
		// Types.
		types := a.expect("GET", "/1.0/types?recursion=1", "", 200, "")["metadata"].([]any)
		if len(types) != 2 || types[0].(map[string]any)["name"] != "app.jinja" || types[0].(map[string]any)["template"] != true || types[1].(map[string]any)["instances"] != float64(2) {
			t.Fatalf("types: %v", types)
		}

		urls := a.expect("GET", "/1.0/types", "", 200, "")["metadata"].([]any)
		if !reflect.DeepEqual(urls, []any{"/1.0/types/app.jinja", "/1.0/types/shape"}) {
			t.Fatalf("type URLs: %v", urls)
		}

		a.expect("GET", "/1.0/types/app.jinja", "", 200, "")
		a.expect("GET", "/1.0/types/nope.jinja", "", 404, "nope.jinja")
		instances := a.expect("GET", "/1.0/types/shape/instances", "", 200, "")["metadata"].([]any)
		if len(instances) != 2 {
			t.Fatalf("shape instances: %v", instances)
		}

		want := map[string]any{"name": "shop-api", "type": "shape", "deployment": "shop", "manifest": "manifest-2", "path": "$.resources[0].resources[1]"}
		if !reflect.DeepEqual(instances[1], want) {
			t.Fatalf("shape instance: %v, want %v", instances[1], want)
		}

		all := a.expect("GET", "/1.0/types/all/instances", "", 200, "")["metadata"].([]any)
		if len(all) != 3 || all[0].(map[string]any)["path"] != "$.resources[0]" {
			t.Fatalf("all instances: %v", all)
		}

		if other := a.expect("GET", "/1.0/types?project=p2", "", 200, "")["metadata"].([]any); len(other) != 0 {
			t.Fatalf("types of another project: %v", other)
		}
	})

	phase(t, "rollback", func(t *testing.T) {
		// Rollback: a dry run first, then the real one; the cause names the old manifest.
		plan := a.expect("POST", "/1.0/deployments/shop/manifests/manifest-1/rollback?dry-run=1", "", 200, "")["metadata"].(map[string]any)
		if len(plan["create"].([]any)) != 1 || len(plan["delete"].([]any)) != 1 {
			t.Fatalf("rollback plan: %v", plan)
		}

		rolled := a.expect("POST", "/1.0/deployments/shop/manifests/manifest-1/rollback", "", 201, "")["metadata"].(map[string]any)
		if rolled["name"] != "manifest-3" || rolled["cause"] != "rollback of manifest-1" {
			t.Fatalf("rollback: %v", rolled)
		}

		shapes := a.shapes("shop")
		if got := keysOf(shapes); !reflect.DeepEqual(got, []string{"debug", "shop-db", "shop-web"}) {
			t.Fatalf("shapes after rollback: %v", got)
		}

		if shapes["shop-web"].(map[string]any)["scaling_maximum"] != float64(3) {
			t.Fatalf("shop-web after rollback: %v", shapes["shop-web"])
		}

		a.expect("POST", "/1.0/deployments/shop/manifests/manifest-7/rollback", "", 404, "")
	})

	phase(t, "types with slashes and colons", func(t *testing.T) {
		// Types with slashes and colons are reached escaped.
		ref := "github.com/acme/templates/web:v1"
		imports := map[string]string{ref + "/web.jinja": "resources: [{name: w, type: shape, properties: {instance_template: {source: {type: image, alias: busybox}}}}]"}
		body, _ := json.Marshal(map[string]any{"name": "remote", "template": "resources: [{name: r, type: '" + ref + "'}]", "template_imports": imports})
		a.expect("POST", "/1.0/deployments", string(body), 201, "")
		a.expect("GET", "/1.0/types/"+ref+"/instances", "", 404, "no such API endpoint")
		got := a.expect("GET", "/1.0/types/"+url.PathEscape(ref)+"/instances", "", 200, "")["metadata"].([]any)
		if len(got) != 1 || got[0].(map[string]any)["deployment"] != "remote" {
			t.Fatalf("instances of %s: %v", ref, got)
		}

		// Without the embedded files the daemon does not fetch.
		body, _ = json.Marshal(map[string]any{"name": "remote2", "template": "resources: [{name: r, type: '" + ref + "'}]"})
		a.expect("POST", "/1.0/deployments", string(body), 400, "nothing may fetch it here")
	})

	phase(t, "manifests go with their deployment", func(t *testing.T) {
		// Manifests go with their deployment.
		a.expect("DELETE", "/1.0/deployments/shop", "", 200, "")
		if types := a.expect("GET", "/1.0/types", "", 200, "")["metadata"].([]any); len(types) != 2 {
			t.Fatalf("types after delete: %v", types)
		}
	})
}
