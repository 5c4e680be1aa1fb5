package main

import (
	"net/http"
	"strconv"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"
	"github.com/gorilla/mux"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/cluster"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

// operationsAPI serves /1.0/operations and /1.0/events like LXD, scoped to what the caller
// may see.
type operationsAPI struct {
	ops    *operations.Manager
	events *events.Server
	access access

	// cluster answers for the operations of other members; nil outside a daemon.
	cluster *cluster.Operations
}

func (a operationsAPI) filter(r *http.Request) events.Filter {
	return a.access.filter(auth.CallerFromContext(r.Context()))
}

// list answers LXD's shape: operations grouped by status ("running", "success", ...).
func (a operationsAPI) list(r *http.Request) response.Response {
	level, err := rest.Recursion(r)
	if err != nil {
		return response.SmartError(err)
	}

	urls, full, err := a.cluster.List(r.Context(), a.ops, a.filter(r))
	if err != nil {
		return response.SmartError(err)
	}

	if level == 0 {
		return response.SyncResponse(urls)
	}

	return response.SyncResponse(full)
}

// visible returns the operation in the path if the caller may see it (cluster.Operations.Visible).
func (a operationsAPI) visible(r *http.Request) (*operations.Operation, *db.Operation, error) {
	return a.cluster.Visible(r.Context(), a.ops, mux.Vars(r)["id"], a.filter(r))
}

// get answers from memory for this member's operations and from the record, which the
// running member keeps current, for the others'.
func (a operationsAPI) get(r *http.Request) response.Response {
	op, remote, err := a.visible(r)
	if err != nil {
		return response.SmartError(err)
	}

	if remote != nil {
		return response.SyncResponse(remote.Operation)
	}

	return response.SyncResponse(op.API())
}

// wait blocks until the operation finishes or ?timeout= seconds pass (-1 or none: no limit).
// Another member's operation is waited on at that member; when it cannot be reached, its
// record is watched instead.
func (a operationsAPI) wait(r *http.Request) response.Response {
	op, remote, err := a.visible(r)
	if err != nil {
		return response.SmartError(err)
	}

	timeout := time.Duration(-1)
	value := r.URL.Query().Get("timeout")
	if value != "" {
		seconds, err := strconv.Atoi(value)
		if err != nil {
			return response.SmartError(lxdapi.StatusErrorf(http.StatusBadRequest, "timeout must be a whole number of seconds, got %q", value))
		}

		if seconds >= 0 {
			timeout = time.Duration(seconds) * time.Second
		}
	}

	if remote != nil {
		forwarded, remote, err := a.cluster.WaitRemote(r, remote, timeout)
		if err != nil {
			return response.SmartError(err)
		}

		if forwarded != nil {
			return response.Relayed(forwarded)
		}

		return response.SyncResponse(remote.Operation)
	}

	return response.SyncResponse(op.Wait(r.Context(), timeout))
}

// cancel needs the right to change what the operation changes: an admin, or an admin key
// on the operation's deployment.
func (a operationsAPI) cancel(r *http.Request) response.Response {
	op, remote, err := a.visible(r)
	if err != nil {
		return response.SmartError(err)
	}

	if remote != nil {
		err = a.access.allowAdminOn(r.Context(), auth.CallerFromContext(r.Context()), remote.DeploymentID)
		if err != nil {
			return response.SmartError(err)
		}

		forwarded, err := a.cluster.CancelRemote(r, remote)
		if err != nil {
			return response.SmartError(err)
		}

		return response.Relayed(forwarded)
	}

	err = a.access.allowAdminOn(r.Context(), auth.CallerFromContext(r.Context()), op.DeploymentID())
	if err != nil {
		return response.SmartError(err)
	}

	return response.SmartError(op.Cancel())
}

// streamEvents serves the /1.0/events websocket (?type=operation,lifecycle,logging,endpoints).
func (a operationsAPI) streamEvents(r *http.Request) response.Response {
	types, project, err := events.Subscription(r.URL.Query(), auth.CallerFromContext(r.Context()).IsAdmin())
	if err != nil {
		return response.SmartError(err)
	}

	filter := a.filter(r)
	return response.ManualResponse(func(w http.ResponseWriter) error {
		return a.events.Serve(w, r, auth.CallerFromContext(r.Context()).StreamKey(), types, project, filter)
	})
}
