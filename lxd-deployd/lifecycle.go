package main

import (
	"net/http"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/events"
)

// Lifecycle actions, in LXD's "<object>-<verb>" style.
const (
	lifecycleDeploymentCreated = "deployment-created"
	lifecycleDeploymentUpdated = "deployment-updated"
	lifecycleDeploymentRenamed = "deployment-renamed"
	lifecycleDeploymentDeleted = "deployment-deleted"
	lifecycleShapeCreated      = "deployment-shape-created"
	lifecycleShapeUpdated      = "deployment-shape-updated"
	lifecycleShapeRenamed      = "deployment-shape-renamed"
	lifecycleShapeDeleted      = "deployment-shape-deleted"
	lifecycleKeyCreated        = "deployment-key-created"
	lifecycleKeyUpdated        = "deployment-key-updated"
	lifecycleKeyRenamed        = "deployment-key-renamed"
	lifecycleKeyDeleted        = "deployment-key-deleted"
	lifecycleInstanceCreated   = "deployment-instance-created"
	lifecycleInstanceDeleted   = "deployment-instance-deleted"
	lifecycleInstanceUpdated   = "deployment-instance-updated"
	lifecycleInstanceMissing   = "deployment-instance-missing"
	lifecycleInstanceOrphaned  = "deployment-instance-orphaned"
)

// lifecycle sends lifecycle events on behalf of the request's caller.
type lifecycle struct {
	events *events.Server
}

func (l lifecycle) emit(r *http.Request, project string, deploymentID int64, action string, source string) {
	if l.events == nil {
		return
	}

	var requestor *lxdapi.EventLifecycleRequestor
	if r != nil {
		caller := auth.CallerFromContext(r.Context())
		requestor = &lxdapi.EventLifecycleRequestor{Username: caller.Name, Protocol: caller.Protocol}
	}

	l.events.Lifecycle(project, deploymentID, action, source, nil, requestor)
}
