// Package frontdoor is the load balancer in front of a shape's instances (issue 35).
//
// The daemon decides which instances serve (endpoints) and hands the door the whole
// picture each time (Apply): the door makes its load balancer match it, adding,
// draining and removing servers without dropping requests. The data path never passes
// through the daemon, so the door's load balancer outlives a daemon restart and a new
// daemon adopts it.
package frontdoor

import (
	"context"
	"time"
)

// Server states, as the endpoints API names them.
const (
	// StateServing takes new connections.
	StateServing = "serving"
	// StateDraining takes no new connections; its open ones finish.
	StateDraining = "draining"
	// StateNotReady is known but takes no traffic (starting, unhealthy, in a hook).
	StateNotReady = "not-ready"
)

// Server is one instance as the door should see it.
type Server struct {
	// Name is the LXD instance name (unique within a frontend).
	Name string
	// Address is the instance's IP address (no port).
	Address string
	// Port is the instance's port.
	Port int
	// State is StateServing, StateDraining or StateNotReady.
	State string
}

// Frontend is one shape's door.
type Frontend struct {
	// Key identifies the shape ("project/deployment/shape"); the driver derives its own
	// load balancer names from it.
	Key string
	// Listen is where the door accepts connections ("127.0.0.1:8080"); empty when the
	// operator's load balancer owns the listener (Backend names its backend).
	Listen string
	// Backend names an operator's existing backend to fill; empty for a private door.
	Backend string
	// Protocol is "http" or "tcp".
	Protocol string
	// CheckPath is the path the load balancer's own health check asks of each server
	// (http only; "/" when empty). Any answer below 500 counts as up: the check asks
	// whether the instance serves, the daemon's health checks ask whether it is well.
	CheckPath string
	// Servers is every instance the shape has, whatever its state.
	Servers []Server
	// Hold, when set, is the address (host:port) of the daemon's hold for this shape
	// (frontdoor/waker): the load balancer sends a connection there only when no server
	// is up, so that a shape scaled to zero holds its first requests instead of refusing
	// them (doc/traffic.md, "Scale to zero").
	Hold string
}

// ServerStats is what the load balancer measured for one server.
type ServerStats struct {
	// Sessions is the number of open connections now.
	Sessions int
	// RequestRate is requests (http) or connections (tcp) per second over the last second.
	RequestRate float64
	// Queue is the number of requests waiting for this server.
	Queue int
	// ResponseTime is the average response time over the last 1024 requests.
	ResponseTime time.Duration
	// Up is false when the load balancer's own check took the server out.
	Up bool
	// Out is true when the load balancer's admin state sends the server no new connection
	// (drained or in maintenance, as whoever drives the door set it). With Sessions at 0 it
	// tells a member that does not drive a shared door that the instance is drained.
	Out bool
}

// FrontendStats is what the load balancer measured for one frontend.
type FrontendStats struct {
	// Sessions, RequestRate, Queue and ResponseTime are the backend's totals.
	Sessions     int
	RequestRate  float64
	Queue        int
	ResponseTime time.Duration
	// Servers by instance name.
	Servers map[string]ServerStats
}

// Door is a load balancer the daemon drives.
type Door interface {
	// Apply makes the door serve exactly these frontends: frontends and servers not
	// listed go, states change in place. It is idempotent and safe to call often.
	Apply(ctx context.Context, frontends []Frontend) error
	// Stats reports every frontend's figures by Frontend.Key.
	Stats(ctx context.Context) (map[string]FrontendStats, error)
	// Close lets go of the load balancer without stopping it (a restarted daemon adopts
	// it). A private door's driver also has a Stop(ctx) that stops its load balancer.
	Close() error
}

// Follower is a door several members of a cluster may reach, of which one drives it at
// a time (an operator's HAProxy): the others follow it, reading its figures without
// changing it.
type Follower interface {
	// Follow tells the door which frontends another member drives, so that Stats reports
	// their figures; it changes nothing in the load balancer.
	Follow(ctx context.Context, frontends []Frontend) error
}

// Sessions is how many connections the door's stats say server name of frontend key
// still has open, and whether the stats know that server at all (a drain waits for 0).
func Sessions(stats map[string]FrontendStats, key, name string) (int, bool) {
	fs, ok := stats[key]
	if !ok {
		return 0, false
	}
	s, ok := fs.Servers[name]
	if !ok {
		return 0, false
	}
	return s.Sessions, true
}
