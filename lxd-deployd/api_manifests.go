package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/deployments"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Manifests are served by deploymentsAPI: they are a part of a deployment, and a rollback
// needs what a deployment's PUT needs (the database, and LXD for forced deletes).

func (a deploymentsAPI) listManifests(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	names, manifests, err := deployments.Manifests(r.Context(), a.db, ref, level == 0)
	if err != nil {
		return response.SmartError(err)
	}

	if level > 0 {
		return response.SyncResponse(manifests)
	}

	urls := make([]string, 0, len(names))
	for _, name := range names {
		urls = append(urls, api.DeploymentManifestURL(ref.Project, ref.Name, name))
	}

	return response.SyncResponse(urls)
}

func (a deploymentsAPI) showManifest(r *http.Request) response.Response {
	ref, name, err := manifestFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	m, err := deployments.Manifest(r.Context(), a.db, ref, name)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponse(m.DeploymentManifest)
}

// rollback re-applies an earlier manifest's config and imports, by the rules of a PUT
// (?force=1, ?dry-run=1), and records it as a new manifest whose cause names the old one
// (seed 002: history moves forward; a rollback is a new version). The deployment's own
// fields (description, config, webhook) are not rolled back: manifests do not hold them.
func (a deploymentsAPI) rollback(r *http.Request) response.Response {
	ref, name, err := manifestFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	m, err := deployments.Manifest(r.Context(), a.db, ref, name)
	if err != nil {
		return response.SmartError(err)
	}

	by := rest.RequestorFromContext(r.Context())
	t, err := a.configs.Expand(r.Context(), by, ref.Project, ref.Name, m.InputConfig, m.Imports, apply.CauseRollback+name)
	if err != nil {
		return response.SmartError(err)
	}

	plan, err := a.configs.Prepare(r.Context(), by, ref, t, dryRunParam(r), rest.ForceParam(r), nil)
	if err != nil {
		return response.SmartError(err)
	}

	if plan != nil {
		return response.SyncResponse(*plan)
	}

	id, applied, err := a.configs.ApplyTo(r.Context(), ref, t)
	if err != nil {
		return response.SmartError(err)
	}

	a.configs.Announce(r.Context(), by, ref, id, t)
	return response.SyncResponseLocation(applied.DeploymentManifest, api.DeploymentManifestURL(ref.Project, ref.Name, t.Manifest()))
}
