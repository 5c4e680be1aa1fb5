package apply

import (
	"context"
	"database/sql"
	"errors"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Templated configs on the deployment handlers (doc/templates.md): what a create, PUT or
// rollback asks of a template. Package main parses the request (the body, ?dry-run=,
// ?force=) and answers; these expand, check and plan. Each returns the config to apply in
// the request's transaction (nil: none), or, for a dry run, the plan to answer instead.

var errNoTemplate = errors.New("nothing to preview or apply: send the config in template (template_imports and ?dry-run=1 go with it)")

// ForCreate expands the template of a create request; a dry run fails where the create
// would, and answers its plan.
func (e *Engine) ForCreate(ctx context.Context, by api.DeploymentRequestor, project string, req api.DeploymentsPost, dryRun bool) (*Config, *api.DeploymentTemplatePlan, error) {
	if req.Template == "" {
		if dryRun || len(req.TemplateImports) > 0 {
			return nil, nil, badRequest(errNoTemplate)
		}

		return nil, nil, nil
	}

	err := validate.Name("deployment", req.Name)
	if err != nil {
		return nil, nil, badRequest(err)
	}

	t, err := e.Expand(ctx, by, project, req.Name, req.Template, req.TemplateImports, CauseCreate)
	if err != nil || !dryRun {
		return t, nil, err
	}

	put := req.DeploymentPut
	if put.Config == nil {
		put.Config = map[string]string{}
	}

	err = validate.Deployment(put)
	if err != nil {
		return nil, nil, badRequest(err)
	}

	plan, err := e.PlanCreate(ctx, project, req.Name, t)
	if err != nil {
		return nil, nil, err
	}

	return nil, &plan, nil
}

// ForUpdate expands the template of a PUT (put, the request's body), as ForCreate: the
// plan checks the request's ETag (checkETag, against the current writable fields) and
// validates put, as the update would. With force it deletes the instances of the shapes
// the config drops before the update's transaction applies the rest (Prepare). PATCH
// never applies a template.
func (e *Engine) ForUpdate(ctx context.Context, by api.DeploymentRequestor, ref refs.DeploymentRef, put api.DeploymentPut, patch bool, dryRun bool, force bool, checkETag func(current api.DeploymentPut) error) (*Config, *api.DeploymentTemplatePlan, error) {
	if put.Template == "" && len(put.TemplateImports) == 0 && !dryRun {
		return nil, nil, nil
	}

	if patch {
		return nil, nil, badRequest(errors.New("PATCH does not apply templates: send the config with PUT, which replaces the deployment's writable fields"))
	}

	if put.Template == "" {
		return nil, nil, badRequest(errNoTemplate)
	}

	t, err := e.Expand(ctx, by, ref.Project, ref.Name, put.Template, put.TemplateImports, CauseUpdate)
	if err != nil {
		return nil, nil, err
	}

	plan, err := e.Prepare(ctx, by, ref, t, dryRun, force, func(ctx context.Context, tx *sql.Tx) error {
		current, err := db.GetDeployment(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		err = checkETag(current.Writable())
		if err != nil {
			return err
		}

		if put.Config == nil {
			put.Config = map[string]string{}
		}

		return badRequest(validate.Deployment(put))
	})

	return t, plan, err
}

// Prepare plans t against an existing deployment after check (which may refuse the
// request; nil: none). A dry run gets the plan; with force the instances of the shapes the
// plan deletes are deleted now, while the shapes themselves go in the transaction that
// applies the config, which also refuses any instance launched since.
func (e *Engine) Prepare(ctx context.Context, by api.DeploymentRequestor, ref refs.DeploymentRef, t *Config, dryRun bool, force bool, check func(ctx context.Context, tx *sql.Tx) error) (*api.DeploymentTemplatePlan, error) {
	p, err := e.Plan(ctx, ref, t, check)
	if err != nil {
		return nil, err
	}

	if dryRun {
		plan := t.PlanAPI(p)
		return &plan, nil
	}

	if !force {
		return nil, nil
	}

	return nil, e.DeleteDropped(ctx, by, p)
}
