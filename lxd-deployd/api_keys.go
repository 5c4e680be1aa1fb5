package main

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/validate"
)

// keysAPI serves /1.0/deployments/{deployment}/keys.
type keysAPI struct {
	db       *db.Cluster
	reporter *reporter.Reporter
}

// keyRef is the deployment key a request is about.
type keyRef struct {
	refs.DeploymentRef
	key string
}

func keyFromRequest(r *http.Request) (keyRef, error) {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return keyRef{}, err
	}

	name, err := rest.PathName(r, "key", "deployment key")
	if err != nil {
		return keyRef{}, err
	}

	return keyRef{DeploymentRef: ref, key: name}, nil
}

// withKey runs f in a transaction with the deployment id and the key the request names.
func (a keysAPI) withKey(ctx context.Context, ref keyRef, f func(ctx context.Context, tx *sql.Tx, deploymentID int64, key *db.Key) error) error {
	return a.db.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		deploymentID, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		key, err := db.GetKey(ctx, tx, deploymentID, ref.key)
		if err != nil {
			return err
		}

		return f(ctx, tx, deploymentID, key)
	})
}

func (a keysAPI) list(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	var keys []db.Key
	err = a.db.Transaction(r.Context(), func(ctx context.Context, tx *sql.Tx) error {
		id, err := db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		keys, err = db.GetKeys(ctx, tx, db.KeyFilter{DeploymentID: id})
		return err
	})
	if err != nil {
		return response.SmartError(err)
	}

	return rest.ListResponse(level, keys,
		func(k db.Key) string { return api.DeploymentKeyURL(ref.Project, ref.Name, k.Name) },
		func(k db.Key) api.DeploymentKey { return k.DeploymentKey })
}

func (a keysAPI) create(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentKeysPost
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	deploymentID, err := createKey(r.Context(), a.db, ref, req)
	if err != nil {
		return response.SmartError(err)
	}

	url := api.DeploymentKeyURL(ref.Project, ref.Name, req.Name)
	a.reporter.Send(rest.RequestorFromContext(r.Context()), deploymentID, reporter.KeyCreated.Event(ref, req.Name))
	return response.SyncResponseLocation(nil, url)
}

// createKey validates and stores a new deployment key; the role defaults to read-only.
func createKey(ctx context.Context, cluster *db.Cluster, ref refs.DeploymentRef, req api.DeploymentKeysPost) (int64, error) {
	err := validate.Name("deployment key", req.Name)
	if err != nil {
		return 0, rest.BadRequest(err)
	}

	if req.Role == "" {
		req.Role = api.DeploymentKeyRoleReadOnly
	}

	err = validate.Role(req.Role)
	if err != nil {
		return 0, rest.BadRequest(err)
	}

	err = validate.Fingerprint(req.CertificateFingerprint)
	if err != nil {
		return 0, rest.BadRequest(err)
	}

	var id int64
	err = cluster.Transaction(ctx, func(ctx context.Context, tx *sql.Tx) error {
		id, err = db.GetDeploymentID(ctx, tx, ref.Project, ref.Name)
		if err != nil {
			return err
		}

		_, err = db.CreateKey(ctx, tx, id, req)
		return err
	})

	return id, err
}

func (a keysAPI) get(r *http.Request) response.Response {
	ref, err := keyFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var key *db.Key
	err = a.withKey(r.Context(), ref, func(ctx context.Context, tx *sql.Tx, deploymentID int64, k *db.Key) error {
		key = k
		return nil
	})
	if err != nil {
		return response.SmartError(err)
	}

	return response.SyncResponseETag(key.DeploymentKey, key.Writable())
}

func (a keysAPI) put(r *http.Request) response.Response {
	return a.update(r, false)
}

func (a keysAPI) patch(r *http.Request) response.Response {
	return a.update(r, true)
}

// update serves PUT and PATCH of a key's description and role.
func (a keysAPI) update(r *http.Request, patch bool) response.Response {
	ref, err := keyFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	body, err := rest.ReadBody(r)
	if err != nil {
		return response.SmartError(err)
	}

	var deploymentID int64
	err = a.withKey(r.Context(), ref, func(ctx context.Context, tx *sql.Tx, id int64, key *db.Key) error {
		deploymentID = id
		err := response.CheckETag(r, key.Writable())
		if err != nil {
			return err
		}

		var put api.DeploymentKeyPut
		if patch {
			put, err = rest.PatchBase(key.Writable())
			if err != nil {
				return err
			}
		}

		err = rest.UnmarshalBody(body, &put)
		if err != nil {
			return err
		}

		if put.Role == "" {
			put.Role = api.DeploymentKeyRoleReadOnly
		}

		err = validate.Role(put.Role)
		if err != nil {
			return rest.BadRequest(err)
		}

		return db.UpdateKey(ctx, tx, key.ID, put)
	})
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(rest.RequestorFromContext(r.Context()), deploymentID, reporter.KeyUpdated.Event(ref.DeploymentRef, ref.key))
	return response.EmptySyncResponse()
}

func (a keysAPI) rename(r *http.Request) response.Response {
	ref, err := keyFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentKeyPost
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	err = validate.Name("deployment key", req.Name)
	if err != nil {
		return response.SmartError(rest.BadRequest(err))
	}

	var deploymentID int64
	err = a.withKey(r.Context(), ref, func(ctx context.Context, tx *sql.Tx, id int64, key *db.Key) error {
		deploymentID = id
		return db.RenameKey(ctx, tx, id, key.ID, req.Name)
	})
	if err != nil {
		return response.SmartError(err)
	}

	url := api.DeploymentKeyURL(ref.Project, ref.Name, req.Name)
	a.reporter.Send(rest.RequestorFromContext(r.Context()), deploymentID, reporter.KeyRenamed.Event(ref.DeploymentRef, req.Name))
	return response.SyncResponseLocation(nil, url)
}

func (a keysAPI) delete(r *http.Request) response.Response {
	ref, err := keyFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var deploymentID int64
	err = a.withKey(r.Context(), ref, func(ctx context.Context, tx *sql.Tx, id int64, key *db.Key) error {
		deploymentID = id
		return db.DeleteKey(ctx, tx, key.ID)
	})
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(rest.RequestorFromContext(r.Context()), deploymentID, reporter.KeyDeleted.Event(ref.DeploymentRef, ref.key))
	return response.EmptySyncResponse()
}
