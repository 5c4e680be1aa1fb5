package shapes

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Changes lists every writable field that differs between two versions of a shape, as
// dotted JSON paths (config.user.tier, instance_template.source.alias, rollout.strategy).
// It walks the whole writable struct, so a field added to DeploymentShapePut is compared
// without anyone listing it here. Top-level fields come in the struct's order, leaves
// within one in key order.
func Changes(before api.DeploymentShapePut, after api.DeploymentShapePut) []api.DeploymentFieldChange {
	old, updated := jsonLeaves(before), jsonLeaves(after)
	changes := []api.DeploymentFieldChange{}
	for _, field := range jsonFields(reflect.TypeOf(before)) {
		for _, path := range unionKeys(old, updated, field) {
			if !reflect.DeepEqual(old[path], updated[path]) {
				changes = append(changes, api.DeploymentFieldChange{Field: path, Old: old[path], New: updated[path]})
			}
		}
	}

	return changes
}

// TemplateChanged reports whether two versions of a shape make different instances: any
// change but the description, the scaling bounds, the rollout settings, how instances are
// looked after (health checks, hooks, warm pool size, resource bounds), where they go
// (placement: a rebalance moves them, doc/placement.md), when the bounds change (the
// schedule) and the front door in front of them (traffic), which leave instances as they are.
func TemplateChanged(before api.DeploymentShapePut, after api.DeploymentShapePut) bool {
	for _, c := range Changes(before, after) {
		if !boundsOrDescription[topField(c.Field)] {
			return true
		}
	}

	return false
}

var boundsOrDescription = map[string]bool{"description": true, "scaling_minimum": true, "scaling_maximum": true, "rollout": true, "health": true, "hooks": true, "warm_pool": true, "resource_bounds": true, "placement": true, "schedule": true, "traffic": true}

func topField(path string) string {
	top, _, _ := strings.Cut(path, ".")
	return top
}

// jsonFields lists the JSON names of a struct's fields in declaration order, walking
// embedded structs.
func jsonFields(t reflect.Type) []string {
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" {
			names = append(names, jsonFields(f.Type)...)
			continue
		}

		if name != "-" && f.IsExported() {
			names = append(names, name)
		}
	}

	return names
}

// unionKeys returns, sorted, the paths of either map that are the field itself or under it.
func unionKeys(a map[string]any, b map[string]any, field string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range []map[string]any{a, b} {
		for k := range m {
			if (k == field || strings.HasPrefix(k, field+".")) && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}

	sort.Strings(keys)
	return keys
}

// jsonLeaves flattens a value's JSON form into dotted paths. Objects are walked; nulls and
// empty objects vanish (LXD reads them alike); lists and scalars are leaves, so that an
// empty list (no profiles) still differs from none (the default profile).
func jsonLeaves(v any) map[string]any {
	data, err := json.Marshal(v)
	if err != nil {
		return map[string]any{"": fmt.Sprintf("%v", v)}
	}

	var decoded any
	_ = json.Unmarshal(data, &decoded)
	out := map[string]any{}
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch x := v.(type) {
		case nil:
		case map[string]any:
			for k, child := range x {
				if path == "" {
					walk(k, child)
				} else {
					walk(path+"."+k, child)
				}
			}
		default:
			out[path] = x
		}
	}

	walk("", decoded)
	return out
}
