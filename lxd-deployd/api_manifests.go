package main

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/apply"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
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

	var names []string
	var manifests []db.Manifest
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		if level == 0 {
			names, err = db.GetManifestNames(ctx, tx, id)
			return err
		}

		manifests, err = db.GetManifests(ctx, tx, id)
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	if level == 0 {
		urls := make([]string, 0, len(names))
		for _, name := range names {
			urls = append(urls, api.DeploymentManifestURL(ref.Project, ref.Name, name))
		}

		return response.SyncResponse(urls)
	}

	result := make([]api.DeploymentManifest, 0, len(manifests))
	for _, m := range manifests {
		result = append(result, m.DeploymentManifest)
	}

	return response.SyncResponse(result)
}

// getManifest reads one manifest in its own transaction.
func (a deploymentsAPI) getManifest(ctx context.Context, ref refs.DeploymentRef, name string) (*db.Manifest, error) {
	var m *db.Manifest
	err := a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		m, err = db.GetManifest(ctx, tx, id, name)
		return err
	})

	return m, err
}

func (a deploymentsAPI) showManifest(r *http.Request) response.Response {
	ref, name, err := manifestFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	m, err := a.getManifest(r.Context(), ref, name)
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

	m, err := a.getManifest(r.Context(), ref, name)
	if err != nil {
		return response.SmartError(err)
	}

	by := rest.RequestorFromContext(r.Context())
	t, err := a.configs.Expand(r.Context(), by, ref.Project, ref.Name, m.InputConfig, m.Imports, apply.CauseRollback+name)
	if err != nil {
		return response.SmartError(err)
	}

	resp := a.prepareTemplate(r, ref, t, nil)
	if resp != nil {
		return resp
	}

	id, applied, err := a.configs.ApplyTo(r.Context(), ref, t)
	if err != nil {
		return response.SmartError(err)
	}

	a.configs.Announce(r.Context(), by, ref, id, t)
	return response.SyncResponseLocation(applied.DeploymentManifest, api.DeploymentManifestURL(ref.Project, ref.Name, t.Manifest()))
}
