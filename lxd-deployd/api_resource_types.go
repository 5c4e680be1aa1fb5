package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/templates/registry"
)

// allTypes is the type name that stands for every type in /1.0/types/{type}/instances.
const allTypes = "all"

// typesAPI serves /1.0/types (seed 000's types API): the resource types in the layouts of
// the latest manifests of a project's deployments, and where each is used.
type typesAPI struct {
	db *db.Cluster
}

// isTemplateType says whether a type names a template rather than a primitive, by the
// expander's own rule.
func isTemplateType(typ string) bool {
	return registry.IsTemplateFile(typ) || registry.IsURL(typ) || registry.IsReference(typ)
}

// typeInstances walks the latest layouts of a project, depth first, and returns every
// resource of type typ ("all": of any type).
func (a typesAPI) typeInstances(ctx context.Context, project string, typ string) ([]api.TemplateTypeInstance, error) {
	var layouts []db.ManifestLayout
	err := a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		layouts, err = db.GetLatestLayouts(ctx, tx, project)
		return err
	})
	if err != nil {
		return nil, err
	}

	instances := []api.TemplateTypeInstance{}
	var walk func(l db.ManifestLayout, path string, resources []api.DeploymentManifestResource)
	walk = func(l db.ManifestLayout, path string, resources []api.DeploymentManifestResource) {
		for i, r := range resources {
			p := fmt.Sprintf("%s.resources[%d]", path, i)
			if typ == allTypes || r.Type == typ {
				instances = append(instances, api.TemplateTypeInstance{Name: r.Name, Type: r.Type, Deployment: l.Deployment, Manifest: l.Manifest, Path: p})
			}

			walk(l, p, r.Resources)
		}
	}

	for _, l := range layouts {
		walk(l, "$", l.Layout.Resources)
	}

	return instances, nil
}

// types groups a project's type instances by type, sorted by name.
func (a typesAPI) types(ctx context.Context, project string) ([]api.TemplateType, error) {
	instances, err := a.typeInstances(ctx, project, allTypes)
	if err != nil {
		return nil, err
	}

	byName := map[string]*api.TemplateType{}
	for _, instance := range instances {
		t := byName[instance.Type]
		if t == nil {
			t = &api.TemplateType{Name: instance.Type, Template: isTemplateType(instance.Type), Deployments: []string{}}
			byName[instance.Type] = t
		}

		t.Instances++
		if len(t.Deployments) == 0 || t.Deployments[len(t.Deployments)-1] != instance.Deployment {
			t.Deployments = append(t.Deployments, instance.Deployment)
		}
	}

	result := make([]api.TemplateType, 0, len(byName))
	for _, t := range byName {
		result = append(result, *t)
	}

	sort.Slice(result, func(i, j int) bool { return result[i].Name < result[j].Name })
	return result, nil
}

func (a typesAPI) list(r *http.Request) response.Response {
	project, err := projectParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	types, err := a.types(r.Context(), project)
	if err != nil {
		return response.SmartError(err)
	}

	if level > 0 {
		return response.SyncResponse(types)
	}

	urls := make([]string, 0, len(types))
	for _, t := range types {
		urls = append(urls, api.TemplateTypeURL(project, t.Name))
	}

	return response.SyncResponse(urls)
}

// typeParam returns the unescaped {type} of the path: types may hold '/' and ':'
// (registry references, URLs), sent escaped.
func typeParam(r *http.Request) (string, error) {
	raw := mux.Vars(r)["type"]
	typ, err := url.PathUnescape(raw)
	if err != nil || typ == "" {
		return "", lxdapi.StatusErrorf(http.StatusBadRequest, "type %q is not a valid path segment: escape '/' as %%2F", raw)
	}

	return typ, nil
}

func (a typesAPI) get(r *http.Request) response.Response {
	project, err := projectParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	typ, err := typeParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	types, err := a.types(r.Context(), project)
	if err != nil {
		return response.SmartError(err)
	}

	for _, t := range types {
		if t.Name == typ {
			return response.SyncResponse(t)
		}
	}

	return response.SmartError(notFoundf("type %q is not used by the latest manifest of any deployment of project %q", typ, project))
}

func (a typesAPI) instances(r *http.Request) response.Response {
	project, err := projectParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	typ, err := typeParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	instances, err := a.typeInstances(r.Context(), project, typ)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(instances)
}
