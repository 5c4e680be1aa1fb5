package main

import (
	"net/http"
	"net/url"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// typesAPI serves /1.0/types (seed 000's types API): the resource types in the layouts of
// the latest manifests of a project's deployments, and where each is used (package apply
// reads them).
type typesAPI struct {
	db *db.Cluster
}

func (a typesAPI) list(r *http.Request) response.Response {
	project, err := rest.ProjectParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	types, err := apply.ProjectTypes(r.Context(), a.db, project)
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
	project, err := rest.ProjectParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	typ, err := typeParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	t, err := apply.ProjectType(r.Context(), a.db, project, typ)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(t)
}

func (a typesAPI) instances(r *http.Request) response.Response {
	project, err := rest.ProjectParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	typ, err := typeParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	instances, err := apply.ProjectTypeInstances(r.Context(), a.db, project, typ)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(instances)
}
