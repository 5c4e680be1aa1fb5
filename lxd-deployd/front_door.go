package main

import (
	"fmt"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/frontdoor"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// Front door modes (--front-door, doc/traffic.md).
const (
	// frontDoorNone drives no load balancer: endpoints are served on the API and
	// /1.0/events for one of the operator's to follow, and a drain lasts its timeout.
	frontDoorNone = "none"
	// frontDoorPrivate runs and supervises a private HAProxy of the daemon's own.
	frontDoorPrivate = "private"
	// frontDoorHAProxy drives an operator's HAProxy through its admin socket
	// (--haproxy-socket).
	frontDoorHAProxy = "haproxy"
)

// doorInterval is how often the doorkeeper looks at the endpoints when nothing pokes it:
// a rollout or a delete pokes it, health verdicts and LXD's addresses are picked up within
// this.
const doorInterval = time.Second

// openFrontDoor returns the door the configuration names, nil for none. The HAProxy
// drivers are package frontdoor's (the haproxy branch); until they are built in, asking
// for one is refused at start rather than silently running without a door.
func openFrontDoor(c config) (frontdoor.Door, error) {
	switch c.frontDoor {
	case "", frontDoorNone:
		return nil, nil
	case frontDoorPrivate, frontDoorHAProxy:
		return nil, fmt.Errorf("--front-door %s: this build has no HAProxy driver yet: use --front-door none", c.frontDoor)
	default:
		return nil, fmt.Errorf("--front-door %q is not a mode: use none, private or haproxy", c.frontDoor)
	}
}

// endpointsChanged sends a shape's new endpoints on /1.0/events (type endpoints).
func (d *daemon) endpointsChanged(project string, deploymentID int64, event api.DeploymentShapeEndpointsEvent) {
	d.events.Send(api.EventTypeEndpoints, project, deploymentID, event)
}
