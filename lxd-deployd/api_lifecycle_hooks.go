package main

import (
	"net/http"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Lifecycle hooks (AWS Auto Scaling's, with heartbeats): the waits themselves, and the hook
// keeper that ends them, are the fleet's (fleet/hooks.go); this is their API.

// lifecycleAction serves POST .../instances/{instance}/lifecycle: continue, abandon or
// heartbeat an instance's wait.
func (a instancesAPI) lifecycleAction(r *http.Request) response.Response {
	ref, err := instanceFromRequest(r)
	if err != nil {
		return response.SmartError(err)
	}

	var req api.DeploymentInstanceLifecyclePost
	err = rest.DecodeBody(r, &req)
	if err != nil {
		return response.SmartError(err)
	}

	err = a.fleet.DecideWait(r.Context(), ref, req.Action)
	if err != nil {
		return response.SmartError(err)
	}

	return response.EmptySyncResponse()
}
