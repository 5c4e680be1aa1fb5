// Package deployments stores what the API creates, changes and deletes of deployments
// and their shapes: the validated write in its transaction, with the revision or webhook
// secret that goes with it. Package main parses the request, calls these and answers
// (and reports the change); the rules themselves are shared/validate's, rollout's
// (revisions) and fleet's (deleting instances).
package deployments

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/fleet"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/webhooks"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// Apply runs in the transaction that creates or updates a deployment (a template's shapes
// and manifest); nil applies nothing.
type Apply func(ctx context.Context, tx *sql.Tx, id int64) error

// badRequest wraps a validation error as a 400.
func badRequest(err error) error {
	if err == nil {
		return nil
	}

	return lxdapi.StatusErrorf(http.StatusBadRequest, "%v", err)
}

// Create validates and stores a new deployment with a new webhook secret; apply runs in
// the same transaction. It returns the deployment's id and its secret.
func Create(ctx context.Context, cluster *db.Cluster, project string, req api.DeploymentsPost, apply Apply) (int64, string, error) {
	err := validate.Name("deployment", req.Name)
	if err != nil {
		return 0, "", badRequest(err)
	}

	if req.Config == nil {
		req.Config = map[string]string{}
	}

	err = validate.Deployment(req.DeploymentPut)
	if err != nil {
		return 0, "", badRequest(err)
	}

	var id int64
	secret := webhooks.NewSecret()
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err = db.CreateDeployment(ctx, tx, project, req)
		if err != nil {
			return err
		}

		err = db.SetWebhookSecret(ctx, tx, id, secret)
		if err != nil {
			return err
		}

		if apply == nil {
			return nil
		}

		return apply(ctx, tx, id)
	})

	return id, secret, err
}

// Get reads one deployment.
func Get(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef) (*db.Deployment, error) {
	var d *db.Deployment
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		d, err = db.GetDeployment(ctx, tx, ref.Project, ref.Name)
		return err
	})

	return d, err
}

// Update replaces a deployment's writable fields with what edit makes of the current ones
// (edit checks the request's ETag and reads its body), validated; apply runs in the same
// transaction. It returns the deployment's id.
func Update(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, edit func(current api.DeploymentPut) (api.DeploymentPut, error), apply Apply) (int64, error) {
	var id int64
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		current, err := db.GetDeployment(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		id = current.ID
		put, err := edit(current.Writable())
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

		err = db.UpdateDeployment(ctx, tx, current.ID, put)
		if err != nil {
			return err
		}

		if apply == nil {
			return nil
		}

		return apply(ctx, tx, current.ID)
	})

	return id, err
}

// Rename renames a deployment and returns its id.
func Rename(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, name string) (int64, error) {
	err := validate.Name("deployment", name)
	if err != nil {
		return 0, badRequest(err)
	}

	var id int64
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		return db.RenameDeployment(ctx, tx, ref.Project, id, name)
	})

	return id, err
}

// Delete deletes a deployment and, with force, its instances (the fleet's
// DeleteWithInstances refuses otherwise while it has any). It returns the deployment's id.
func Delete(ctx context.Context, cluster *db.Cluster, f *fleet.Fleet, ref refs.DeploymentRef, by api.DeploymentRequestor, force bool) (int64, error) {
	var id int64
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		id, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		return err
	})
	if err != nil {
		return 0, err
	}

	err = f.DeleteWithInstances(ctx, by, fmt.Sprintf("deployment %q", ref.Name), force,
		func(ctx context.Context, tx *sql.Tx) ([]db.Instance, error) {
			return db.GetInstances(ctx, tx, db.InstanceFilter{DeploymentID: id})
		},
		func(ctx context.Context, tx *sql.Tx) error { return db.DeleteDeployment(ctx, tx, id) })

	return id, err
}

// Manifests reads a deployment's manifests: only their names when names is set.
func Manifests(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, names bool) ([]string, []api.DeploymentManifest, error) {
	var list []string
	var manifests []db.Manifest
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		if names {
			list, err = db.GetManifestNames(ctx, tx, id)
			return err
		}

		manifests, err = db.GetManifests(ctx, tx, id)
		return err
	})
	if err != nil || names {
		return list, nil, err
	}

	result := make([]api.DeploymentManifest, 0, len(manifests))
	for _, m := range manifests {
		result = append(result, m.DeploymentManifest)
	}

	return nil, result, nil
}

// Manifest reads one manifest of a deployment.
func Manifest(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, name string) (*db.Manifest, error) {
	var m *db.Manifest
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		m, err = db.GetManifest(ctx, tx, id, name)
		return err
	})

	return m, err
}

// Names are the names of a project's deployments: a listing of one project's URLs needs
// only them.
func Names(ctx context.Context, cluster *db.Cluster, project string) ([]string, error) {
	var names []string
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		names, err = db.GetDeploymentNames(ctx, tx, project)
		return err
	})

	return names, err
}

// List reads the deployments of a project, of every project when project is "".
func List(ctx context.Context, cluster *db.Cluster, project string) ([]db.Deployment, error) {
	var rows []db.Deployment
	err := cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		rows, err = db.GetDeployments(ctx, tx, db.DeploymentFilter{Project: project})
		return err
	})

	return rows, err
}
