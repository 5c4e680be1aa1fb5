package main

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strconv"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Templated configs on the deployment handlers (doc/templates.md): these parse what a
// create, PUT or rollback asks of a template, call the apply engine (package apply) and
// answer its dry runs and refusals.

// dryRunParam reports whether ?dry-run=1 (or true) was given.
func dryRunParam(r *http.Request) bool {
	dryRun, _ := strconv.ParseBool(r.URL.Query().Get("dry-run"))
	return dryRun
}

var errNoTemplate = errors.New("nothing to preview or apply: send the config in template (template_imports and ?dry-run=1 go with it)")

// templateForCreate expands the template of a create request. It answers (a non-nil
// response) a bad template, and a dry run with its plan; otherwise the template (nil when
// the request has none) is applied in the transaction that creates the deployment.
func (a deploymentsAPI) templateForCreate(r *http.Request, project string, req api.DeploymentsPost) (*apply.Config, response.Response) {
	dryRun := dryRunParam(r)
	if req.Template == "" {
		if dryRun || len(req.TemplateImports) > 0 {
			return nil, response.SmartError(rest.BadRequest(errNoTemplate))
		}

		return nil, nil
	}

	err := validate.Name("deployment", req.Name)
	if err != nil {
		return nil, response.SmartError(rest.BadRequest(err))
	}

	t, err := a.configs.Expand(r.Context(), rest.RequestorFromContext(r.Context()), project, req.Name, req.Template, req.TemplateImports, apply.CauseCreate)
	if err != nil {
		return nil, response.SmartError(err)
	}

	if !dryRun {
		return t, nil
	}

	// A dry run fails where the create would.
	put := req.DeploymentPut
	if put.Config == nil {
		put.Config = map[string]string{}
	}

	err = validate.Deployment(put)
	if err != nil {
		return nil, response.SmartError(rest.BadRequest(err))
	}

	plan, err := a.configs.PlanCreate(r.Context(), project, req.Name, t)
	if err != nil {
		return nil, response.SmartError(err)
	}

	return nil, response.SyncResponse(plan)
}

// templateForUpdate expands the template of a PUT. Like templateForCreate it answers a bad
// template and a dry run; with ?force=1 it deletes the instances of the shapes the config
// drops before the update's transaction applies the rest. PATCH never applies a template.
func (a deploymentsAPI) templateForUpdate(r *http.Request, ref refs.DeploymentRef, body []byte, patch bool) (*apply.Config, response.Response) {
	var probe api.DeploymentPut
	err := rest.UnmarshalBody(body, &probe)
	if err != nil {
		return nil, response.SmartError(err)
	}

	dryRun := dryRunParam(r)
	if probe.Template == "" && len(probe.TemplateImports) == 0 && !dryRun {
		return nil, nil
	}

	if patch {
		return nil, response.SmartError(rest.BadRequest(errors.New("PATCH does not apply templates: send the config with PUT, which replaces the deployment's writable fields")))
	}

	if probe.Template == "" {
		return nil, response.SmartError(rest.BadRequest(errNoTemplate))
	}

	t, err := a.configs.Expand(r.Context(), rest.RequestorFromContext(r.Context()), ref.Project, ref.Name, probe.Template, probe.TemplateImports, apply.CauseUpdate)
	if err != nil {
		return nil, response.SmartError(err)
	}

	resp := a.prepareTemplate(r, ref, t, func(ctx context.Context, tx *sql.Tx) error {
		current, err := db.GetDeployment(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		err = response.CheckETag(r, current.Writable())
		if err != nil {
			return err
		}

		if probe.Config == nil {
			probe.Config = map[string]string{}
		}

		return rest.BadRequest(validate.Deployment(probe))
	})

	return t, resp
}

// prepareTemplate plans t against an existing deployment after check (which may refuse the
// request). A dry run gets the plan as its answer; with ?force=1 the instances of the
// shapes the plan deletes are deleted now, while the shapes themselves go in the
// transaction that applies the config, which also refuses any instance launched since.
func (a deploymentsAPI) prepareTemplate(r *http.Request, ref refs.DeploymentRef, t *apply.Config, check func(ctx context.Context, tx *sql.Tx) error) response.Response {
	p, err := a.configs.Plan(r.Context(), ref, t, check)
	if err != nil {
		return response.SmartError(err)
	}

	if dryRunParam(r) {
		return response.SyncResponse(t.PlanAPI(p))
	}

	if !rest.ForceParam(r) {
		return nil
	}

	err = a.configs.DeleteDropped(r.Context(), rest.RequestorFromContext(r.Context()), p)
	if err != nil {
		return response.SmartError(err)
	}

	return nil
}
