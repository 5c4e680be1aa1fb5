package main

import (
	"context"
	"database/sql"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// deploymentsAPI serves /1.0/deployments.
type deploymentsAPI struct {
	db *db.Cluster
}

// deploymentRef is the deployment a request is about, from its path and ?project=.
type deploymentRef struct {
	project string
	name    string
}

func deploymentFromRequest(r *http.Request) (deploymentRef, error) {
	project, err := projectParam(r)
	if err != nil {
		return deploymentRef{}, err
	}

	name, err := pathName(r, "deployment", "deployment")
	if err != nil {
		return deploymentRef{}, err
	}

	return deploymentRef{project: project, name: name}, nil
}

func (a deploymentsAPI) list(r *http.Request) response.Response {
	project, err := projectParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	var deployments []db.Deployment
	var names []string
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		if level == 0 {
			names, err = db.GetDeploymentNames(ctx, tx, project)
			return err
		}

		deployments, err = db.GetDeployments(ctx, tx, db.DeploymentFilter{Project: project})
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	if level == 0 {
		urls := make([]string, 0, len(names))
		for _, name := range names {
			urls = append(urls, api.DeploymentURL(project, name))
		}

		return response.SyncResponse(urls)
	}

	result := make([]api.Deployment, 0, len(deployments))
	for _, d := range deployments {
		result = append(result, d.Deployment)
	}

	return response.SyncResponse(result)
}

func (a deploymentsAPI) create(r *http.Request) response.Response {
	project, err := projectParam(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentsPost
	err = decodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	err = createDeployment(r.Context(), a.db, project, req)
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponseLocation(nil, api.DeploymentURL(project, req.Name))
}

// createDeployment validates and stores a new deployment.
func createDeployment(ctx context.Context, cluster *db.Cluster, project string, req api.DeploymentsPost) error {
	err := validate.Name("deployment", req.Name)
	if err != nil {
		return badRequest(err)
	}

	if req.Config == nil {
		req.Config = map[string]string{}
	}

	err = validate.Deployment(req.DeploymentPut)
	if err != nil {
		return badRequest(err)
	}

	return cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := db.CreateDeployment(ctx, tx, project, req)
		return err
	})
}

func (a deploymentsAPI) get(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var d *db.Deployment
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		d, err = db.GetDeployment(ctx, tx, ref.project, ref.name)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponseETag(d.Deployment, d.Writable())
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

	body, err := readBody(r)
	if err != nil {
		return response.SmartError(err)
	}

	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		current, err := db.GetDeployment(ctx, tx, ref.project, ref.name)
		if err != nil {
			return err
		}

		err = response.CheckETag(r, current.Writable())
		if err != nil {
			return err
		}

		var put api.DeploymentPut
		if patch {
			put = current.Writable()
		}

		err = unmarshalBody(body, &put)
		if err != nil {
			return err
		}

		if put.Config == nil {
			put.Config = map[string]string{}
		}

		err = validate.Deployment(put)
		if err != nil {
			return badRequest(err)
		}

		return db.UpdateDeployment(ctx, tx, current.ID, put)
	})

	return response.SmartError(err)
}

func (a deploymentsAPI) rename(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentPost
	err = decodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	err = validate.Name("deployment", req.Name)
	if err != nil {
		return response.SmartError(badRequest(err))
	}

	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.project, ref.name)
		if err != nil {
			return err
		}

		return db.RenameDeployment(ctx, tx, ref.project, id, req.Name)
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponseLocation(nil, api.DeploymentURL(ref.project, req.Name))
}

func (a deploymentsAPI) delete(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	err = deleteDeployment(r.Context(), a.db, ref, forceParam(r))
	return response.SmartError(err)
}

// deleteDeployment removes a deployment. While it has instances it is refused unless
// forced.
func deleteDeployment(ctx context.Context, cluster *db.Cluster, ref deploymentRef, force bool) error {
	return cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.project, ref.name)
		if err != nil {
			return err
		}

		instances, err := db.GetInstances(ctx, tx, db.InstanceFilter{DeploymentID: id})
		if err != nil {
			return err
		}

		if len(instances) > 0 && !force {
			return lxdapi.StatusErrorf(http.StatusConflict, "deployment %q still has %d instances: delete them first or use force", ref.name, len(instances))
		}

		return db.DeleteDeployment(ctx, tx, id)
	})
}
