// Package backend is everything that talks to LXD. The daemon starts and serves its
// management API without LXD; this package keeps trying to connect and tells callers why
// LXD is unavailable when it is.
package backend

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	lxd "github.com/canonical/lxd/client"
	lxdapi "github.com/canonical/lxd/shared/api"
)

// Status describes the connection to LXD.
type Status struct {
	// Online is true while LXD answers.
	Online bool

	// Reason LXD is unavailable, empty when online.
	Reason string

	// ServerVersion of the connected LXD.
	ServerVersion string
}

// LXD keeps a connection to the local LXD daemon's unix socket.
type LXD struct {
	socket string
	logger *slog.Logger

	mu     sync.RWMutex
	client lxd.InstanceServer
	status Status

	// checks is ChecksClient's kept-alive client (checks_client.go).
	checks *checksClient

	// cluster is the LXD cluster behind the socket, refreshed by every probe (cluster.go).
	cluster clusterState
}

// Calls hears of calls to LXD by kind ("probe"): the daemon's metrics.
type Calls interface {
	LXDCall(kind string, took time.Duration, err error)
}

// NewLXD returns a connector for the LXD unix socket at socket; Run connects it.
func NewLXD(socket string, logger *slog.Logger) *LXD {
	return &LXD{
		socket: socket,
		logger: logger,
		status: Status{Reason: "not connected yet"},
	}
}

// Socket returns the LXD socket path this connector uses.
func (l *LXD) Socket() string {
	return l.socket
}

// Run connects to LXD and keeps checking the connection until ctx ends, reconnecting when
// LXD goes away and comes back. Each probe is told to calls, when not nil: the loop that
// probes reports them, as the metrics that count them also read this connection's status
// (so neither can be built before the other).
func (l *LXD) Run(ctx context.Context, interval time.Duration, calls Calls) {
	for {
		l.check(calls)

		select {
		case <-ctx.Done():
			return
		case <-time.After(interval):
		}
	}
}

// check probes the current connection, or makes a new one.
func (l *LXD) check(calls Calls) {
	l.mu.RLock()
	client := l.client
	l.mu.RUnlock()

	if client == nil {
		// The connection learns the server (its API extensions) here, before anyone else
		// uses it: the client caches that in fields it does not lock.
		var err error
		client, err = lxd.ConnectLXDUnix(l.socket, nil)
		if err != nil {
			l.setStatus(nil, Status{Reason: fmt.Sprintf("cannot connect to LXD at %s: %v", l.socket, err)})
			return
		}
	}

	// A raw query probes without rewriting that cache under the feet of concurrent calls
	// (GetServer would: a data race with every UseProject and CheckExtension).
	start := time.Now()
	resp, _, err := client.RawQuery("GET", "/1.0", nil, "")
	if calls != nil {
		calls.LXDCall("probe", time.Since(start), err)
	}

	var server lxdapi.Server
	if err == nil {
		err = resp.MetadataAsStruct(&server)
	}

	if err != nil {
		client.Disconnect()
		l.setStatus(nil, Status{Reason: fmt.Sprintf("LXD at %s does not answer: %v", l.socket, err)})
		return
	}

	l.setStatus(client, Status{Online: true, ServerVersion: server.Environment.ServerVersion})
	l.refreshCluster(client, server.Environment.ServerClustered, server.Environment.ServerName)
}

// setStatus records a new connection state and logs transitions once, not every probe.
func (l *LXD) setStatus(client lxd.InstanceServer, status Status) {
	l.mu.Lock()
	previous := l.status
	l.client = client
	l.status = status
	l.mu.Unlock()

	switch {
	case status.Online && !previous.Online:
		l.logger.Info("connected to LXD", "socket", l.socket, "version", status.ServerVersion)
	case !status.Online && status.Reason != previous.Reason:
		l.logger.Warn("LXD unavailable", "reason", status.Reason)
	}
}

// Status returns the current state of the connection.
func (l *LXD) Status() Status {
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.status
}

// connected returns the connected LXD client, or a 503 error saying why there is none.
// It is not exported: outside this package LXD is reached through Conn and the narrow
// methods (narrow.go), never through the raw client (issue 34).
func (l *LXD) connected() (lxd.InstanceServer, error) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.client == nil {
		return nil, lxdapi.StatusErrorf(http.StatusServiceUnavailable, "LXD is unavailable: %s", l.status.Reason)
	}

	return l.client, nil
}

// SocketAnswers reports whether an LXD answers on the unix socket before ctx ends (the
// connection reads GET /1.0), without keeping the connection.
func SocketAnswers(ctx context.Context, socket string) bool {
	c, err := lxd.ConnectLXDUnixWithContext(ctx, socket, nil)
	if err != nil {
		return false
	}

	c.Disconnect()
	return true
}
