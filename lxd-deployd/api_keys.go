package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/refs"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/reporter"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/trust"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// keysAPI serves /1.0/deployments/{deployment}/keys (package trust's Keys).
type keysAPI struct {
	db       *db.Cluster
	reporter *reporter.Reporter
}

func (a keysAPI) keys() trust.Keys {
	return trust.Keys{DB: a.db}
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

func (a keysAPI) list(r *http.Request) response.Response {
	ref, err := deploymentFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	keys, err := a.keys().List(r.Context(), ref)
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

	deploymentID, err := a.keys().Create(r.Context(), ref, req)
	if err != nil {
		return response.SmartError(err)
	}

	url := api.DeploymentKeyURL(ref.Project, ref.Name, req.Name)
	a.reporter.Send(rest.RequestorFromContext(r.Context()), deploymentID, reporter.KeyCreated.Event(ref, req.Name))
	return response.SyncResponseLocation(nil, url)
}

func (a keysAPI) get(r *http.Request) response.Response {
	ref, err := keyFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	key, err := a.keys().Get(r.Context(), ref.DeploymentRef, ref.key)
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

	deploymentID, err := a.keys().Update(r.Context(), ref.DeploymentRef, ref.key, rest.EditFromBody[api.DeploymentKeyPut](r, body, patch))
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

	deploymentID, err := a.keys().Rename(r.Context(), ref.DeploymentRef, ref.key, req.Name)
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

	deploymentID, err := a.keys().Delete(r.Context(), ref.DeploymentRef, ref.key)
	if err != nil {
		return response.SmartError(err)
	}

	a.reporter.Send(rest.RequestorFromContext(r.Context()), deploymentID, reporter.KeyDeleted.Event(ref.DeploymentRef, ref.key))
	return response.EmptySyncResponse()
}
