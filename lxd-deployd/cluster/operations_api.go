package cluster

import (
	"context"
	"net/http"
	"strings"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/operations"
)

// What /1.0/operations shows across members: this member's operations (from memory) and
// the records of the others', those a caller may see (allowed). c is nil outside a daemon:
// this member's operations only.

// List groups the operations the caller may see by status ("running", "success", ...), as
// LXD does: their URLs, and the operations themselves.
func (c *Operations) List(ctx context.Context, ops *operations.Manager, allowed events.Filter) (map[string][]string, map[string][]lxdapi.Operation, error) {
	urls := map[string][]string{}
	full := map[string][]lxdapi.Operation{}
	for _, op := range ops.List(allowed) {
		info := op.API()
		status := strings.ToLower(info.Status)
		urls[status] = append(urls[status], op.URL())
		full[status] = append(full[status], info)
	}

	if c == nil {
		return urls, full, nil
	}

	others, err := c.Others(ctx)
	if err != nil {
		return nil, nil, err
	}

	for _, op := range others {
		if !allowed(op.DeploymentID) {
			continue
		}

		status := strings.ToLower(op.Status)
		urls[status] = append(urls[status], "/1.0/operations/"+op.ID)
		full[status] = append(full[status], op.Operation)
	}

	return urls, full, nil
}

// Visible returns operation id if the caller may see it: this member's (local), or the
// record of one another member runs (remote); otherwise a 404, so that other deployments'
// operations do not leak.
func (c *Operations) Visible(ctx context.Context, ops *operations.Manager, id string, allowed events.Filter) (local *operations.Operation, remote *db.Operation, err error) {
	local, err = ops.Get(id)
	if err == nil {
		if !allowed(local.DeploymentID()) {
			return nil, nil, lxdapi.StatusErrorf(http.StatusNotFound, "operation %q not found", id)
		}

		return local, nil, nil
	}

	if c == nil {
		return nil, nil, err
	}

	remote, err = c.Lookup(ctx, id)
	if err != nil {
		return nil, nil, err
	}

	if !allowed(remote.DeploymentID) {
		return nil, nil, lxdapi.StatusErrorf(http.StatusNotFound, "operation %q not found", id)
	}

	return nil, remote, nil
}

// WaitRemote waits on another member's operation: at that member (forwarded, whose answer
// the caller relays as is), or, when it cannot be reached, by watching its record.
func (c *Operations) WaitRemote(r *http.Request, remote *db.Operation, timeout time.Duration) (*http.Response, *db.Operation, error) {
	if remote.Member != c.Member() {
		forwarded, err := c.Forward(r, remote.Member)
		if err == nil {
			return forwarded, nil, nil
		}
	}

	remote, err := c.WaitRecord(r.Context(), remote.ID, timeout)
	return nil, remote, err
}

// CancelRemote cancels another member's operation at that member, and returns its answer
// for the caller to relay as is.
func (c *Operations) CancelRemote(r *http.Request, remote *db.Operation) (*http.Response, error) {
	if remote.StatusCode.IsFinal() || remote.Member == c.Member() {
		return nil, lxdapi.StatusErrorf(http.StatusBadRequest, "operation %s has already finished", remote.ID)
	}

	forwarded, err := c.Forward(r, remote.Member)
	if err != nil {
		return nil, lxdapi.StatusErrorf(http.StatusServiceUnavailable, "member %q, which runs operation %s, cannot be reached (%v): try again", remote.Member, remote.ID, err)
	}

	return forwarded, nil
}
