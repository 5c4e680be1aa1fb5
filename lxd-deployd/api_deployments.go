package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/deployments"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// deploymentsAPI serves /1.0/deployments.
type deploymentsAPI struct {
	db       *db.Cluster
	fleet    *fleet.Fleet
	reporter *reporter.Reporter

	// configs expands, plans and applies templated configs (and their manifests' rollbacks).
	configs *apply.Engine
}

func (a deploymentsAPI) list(r *http.Request) response.Response {
	project, err := rest.ProjectsParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	clauses, err := rest.ParseFilter(r)
	if err != nil {
		return response.SmartError(err)
	}

	// The common case, one project's URLs unfiltered, needs only the names.
	if level == 0 && clauses == nil && project != "" {
		names, err := deployments.Names(r.Context(), a.db, project)
		if err != nil {
			return response.SmartError(err)
		}

		return rest.ListResponse(level, names, func(name string) string { return api.DeploymentURL(project, name) }, func(name string) string { return name })
	}

	rows, err := deployments.List(r.Context(), a.db, project)
	if err != nil {
		return response.SmartError(err)
	}

	visible := make([]api.Deployment, 0, len(rows))
	for _, d := range rows {
		visible = append(visible, rest.DeploymentFor(r, d.Deployment))
	}

	visible, err = rest.FilterDeployments(visible, clauses)
	if err != nil {
		return response.SmartError(err)
	}

	// Across projects the URLs carry each deployment's project, as LXD's do.
	return rest.ListResponse(level, visible, func(d api.Deployment) string { return api.DeploymentURL(d.Project, d.Name) }, func(d api.Deployment) api.Deployment { return d })
}

func (a deploymentsAPI) create(r *http.Request) response.Response {
	project, err := rest.ProjectParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentsPost
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	tmpl, resp := a.templateForCreate(r, project, req)
	if resp != nil {
		return resp
	}

	id, secret, err := deployments.Create(r.Context(), a.db, project, req, tmpl.Apply)
	if err != nil {
		return response.SmartError(err)
	}

	url := api.DeploymentURL(project, req.Name)
	a.reporter.Send(rest.RequestorFromContext(r.Context()), id, reporter.DeploymentCreated.Event(refs.DeploymentRef{Project: project, Name: req.Name}))
	a.configs.Announce(r.Context(), rest.RequestorFromContext(r.Context()), refs.DeploymentRef{Project: project, Name: req.Name}, id, tmpl)

	// The webhook secret is shown once here, and on request (webhook/secret), never in GET.
	created := api.DeploymentCreated{DeploymentWebhookSecret: api.DeploymentWebhookSecret{Secret: secret}}
	if tmpl != nil {
		created.Warnings = tmpl.Warnings()
	}

	return response.SyncResponseLocation(created, url)
}

func (a deploymentsAPI) get(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	d, err := deployments.Get(r.Context(), a.db, ref)
	if err != nil {
		return response.SmartError(err)
	}

	etag := d.Writable()
	return response.SyncResponseETag(rest.DeploymentFor(r, d.Deployment), etag)
}

func (a deploymentsAPI) put(r *http.Request) response.Response {
	return a.update(r, false)
}

func (a deploymentsAPI) patch(r *http.Request) response.Response {
	return a.update(r, true)
}

// update serves PUT (replace the writable fields) and PATCH (merge into them).
func (a deploymentsAPI) update(r *http.Request, patch bool) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	body, err := rest.ReadBody(r)
	if err != nil {
		return response.SmartError(err)
	}

	tmpl, resp := a.templateForUpdate(r, ref, body, patch)
	if resp != nil {
		return resp
	}

	id, err := deployments.Update(r.Context(), a.db, ref, rest.EditFromBody[api.DeploymentPut](r, body, patch), tmpl.Apply)
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(rest.RequestorFromContext(r.Context()), id, reporter.DeploymentUpdated.Event(ref))
	a.configs.Announce(r.Context(), rest.RequestorFromContext(r.Context()), ref, id, tmpl)
	if tmpl != nil {
		return response.SyncResponse(api.DeploymentTemplateResult{Warnings: tmpl.Warnings()})
	}

	return response.EmptySyncResponse()
}

func (a deploymentsAPI) rename(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentPost
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	id, err := deployments.Rename(r.Context(), a.db, ref, req.Name)
	if err != nil {
		return response.SmartError(err)
	}

	url := api.DeploymentURL(ref.Project, req.Name)
	a.reporter.Send(rest.RequestorFromContext(r.Context()), id, reporter.DeploymentRenamed.Event(refs.DeploymentRef{Project: ref.Project, Name: req.Name}))
	return response.SyncResponseLocation(nil, url)
}

func (a deploymentsAPI) delete(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	id, err := deployments.Delete(r.Context(), a.db, a.fleet, ref, rest.RequestorFromContext(r.Context()), rest.ForceParam(r))
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(rest.RequestorFromContext(r.Context()), id, reporter.DeploymentDeleted.Event(ref))
	return response.EmptySyncResponse()
}
