package main

import (
	"net/http"
	"strconv"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Templated configs on the deployment handlers (doc/templates.md): these parse what a
// create, PUT or rollback asks of a template, call the apply engine (package apply) and
// answer its dry runs and refusals.

// dryRunParam reports whether ?dry-run=1 (or true) was given.
func dryRunParam(r *http.Request) bool {
	dryRun, _ := strconv.ParseBool(r.URL.Query().Get("dry-run"))
	return dryRun
}

// templateAnswer is the engine's answer to a request with a template: a non-nil response
// answers a refusal or a dry run's plan; otherwise the template (nil when the request has
// none) is applied in the request's transaction.
func templateAnswer(t *apply.Config, plan *api.DeploymentTemplatePlan, err error) (*apply.Config, response.Response) {
	if err != nil {
		return nil, response.SmartError(err)
	}

	if plan != nil {
		return nil, response.SyncResponse(*plan)
	}

	return t, nil
}

// templateForCreate expands the template of a create request (apply.Engine.ForCreate).
func (a deploymentsAPI) templateForCreate(r *http.Request, project string, req api.DeploymentsPost) (*apply.Config, response.Response) {
	return templateAnswer(a.configs.ForCreate(r.Context(), rest.RequestorFromContext(r.Context()), project, req, dryRunParam(r)))
}

// templateForUpdate expands the template of a PUT (apply.Engine.ForUpdate); with ?force=1
// it deletes the instances of the shapes the config drops before the update's transaction
// applies the rest. PATCH never applies a template.
func (a deploymentsAPI) templateForUpdate(r *http.Request, ref refs.DeploymentRef, body []byte, patch bool) (*apply.Config, response.Response) {
	var probe api.DeploymentPut
	err := rest.UnmarshalBody(body, &probe)
	if err != nil {
		return nil, response.SmartError(err)
	}

	checkETag := func(current api.DeploymentPut) error { return response.CheckETag(r, current) }
	return templateAnswer(a.configs.ForUpdate(r.Context(), rest.RequestorFromContext(r.Context()), ref, probe, patch, dryRunParam(r), rest.ForceParam(r), checkETag))
}
