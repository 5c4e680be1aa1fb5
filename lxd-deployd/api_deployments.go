package main

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
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
		var names []string
		err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
			names, err = db.GetDeploymentNames(ctx, tx, project)
			return err
		})
		if err != nil {
			return response.SmartError(err)
		}

		return rest.ListResponse(level, names, func(name string) string { return api.DeploymentURL(project, name) }, func(name string) string { return name })
	}

	var deployments []db.Deployment
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		deployments, err = db.GetDeployments(ctx, tx, db.DeploymentFilter{Project: project})
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	visible := make([]api.Deployment, 0, len(deployments))
	for _, d := range deployments {
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

	id, err := createDeployment(r.Context(), a.db, project, req, tmpl.Apply)
	if err != nil {
		return response.SmartError(err)
	}

	url := api.DeploymentURL(project, req.Name)
	a.reporter.Send(rest.RequestorFromContext(r.Context()), id, reporter.DeploymentCreated.Event(refs.DeploymentRef{Project: project, Name: req.Name}))
	a.configs.Announce(r.Context(), rest.RequestorFromContext(r.Context()), refs.DeploymentRef{Project: project, Name: req.Name}, id, tmpl)

	// The webhook secret is shown once here, and on request (webhook/secret), never in GET.
	var secret string
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		secret, err = db.GetWebhookSecret(ctx, tx, id)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	created := api.DeploymentCreated{DeploymentWebhookSecret: api.DeploymentWebhookSecret{Secret: secret}}
	if tmpl != nil {
		created.Warnings = tmpl.Warnings()
	}

	return response.SyncResponseLocation(created, url)
}

// createDeployment validates and stores a new deployment; apply (a template's shapes and
// manifest) runs in the same transaction.
func createDeployment(ctx context.Context, cluster *db.Cluster, project string, req api.DeploymentsPost, apply func(ctx context.Context, tx *sql.Tx, id int64) error) (int64, error) {
	err := validate.Name("deployment", req.Name)
	if err != nil {
		return 0, rest.BadRequest(err)
	}

	if req.Config == nil {
		req.Config = map[string]string{}
	}

	err = validate.Deployment(req.DeploymentPut)
	if err != nil {
		return 0, rest.BadRequest(err)
	}

	var id int64
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err = db.CreateDeployment(ctx, tx, project, req)
		if err != nil {
			return err
		}

		err = db.SetWebhookSecret(ctx, tx, id, newWebhookSecret())
		if err != nil {
			return err
		}

		return apply(ctx, tx, id)
	})

	return id, err
}

func (a deploymentsAPI) get(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var d *db.Deployment
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		d, err = db.GetDeployment(ctx, tx, ref.Project, ref.Name)
		return err
	})
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

	var id int64
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		current, err := db.GetDeployment(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		id = current.ID
		err = response.CheckETag(r, current.Writable())
		if err != nil {
			return err
		}

		var put api.DeploymentPut
		if patch {
			put, err = rest.PatchBase(current.Writable())
			if err != nil {
				return err
			}
		}

		err = rest.UnmarshalBody(body, &put)
		if err != nil {
			return err
		}

		if put.Config == nil {
			put.Config = map[string]string{}
		}

		err = validate.Deployment(put)
		if err != nil {
			return rest.BadRequest(err)
		}

		err = db.UpdateDeployment(ctx, tx, current.ID, put)
		if err != nil {
			return err
		}

		return tmpl.Apply(ctx, tx, current.ID)
	})
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

	err = validate.Name("deployment", req.Name)
	if err != nil {
		return response.SmartError(rest.BadRequest(err))
	}

	var id int64
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		id, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		return db.RenameDeployment(ctx, tx, ref.Project, id, req.Name)
	})
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

	var id int64
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		id, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	err = a.fleet.DeleteWithInstances(r.Context(), rest.RequestorFromContext(r.Context()), fmt.Sprintf("deployment %q", ref.Name), rest.ForceParam(r),
		func(ctx context.Context, tx *sql.Tx) ([]db.Instance, error) {
			return db.GetInstances(ctx, tx, db.InstanceFilter{DeploymentID: id})
		},
		func(ctx context.Context, tx *sql.Tx) error { return db.DeleteDeployment(ctx, tx, id) })
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(rest.RequestorFromContext(r.Context()), id, reporter.DeploymentDeleted.Event(ref))
	return response.EmptySyncResponse()
}
