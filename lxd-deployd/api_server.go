package main

import (
	"context"
	"net/http"
	"os"
	"time"

	lxdapi "github.com/canonical/lxd/shared/api"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/backend"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/response"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
	"github.com/lxd-deployd/lxd-deployd/shared/version"
)

// serverAPI serves / and /1.0.
type serverAPI struct {
	lxd             *backend.LXD
	certificatePEM  string
	fingerprint     string
	addresses       func() []string
	databaseAddress string
	members         func(ctx context.Context) (int, error)

	// lxdPrivate is true when the daemon started its own LXD (--private-lxd).
	lxdPrivate bool
}

func (a serverAPI) root(r *http.Request) response.Response {
	return response.SyncResponse([]string{"/1.0"})
}

func (a serverAPI) get(r *http.Request) response.Response {
	return response.SyncResponse(a.server(r.Context(), auth.CallerFromContext(r.Context())))
}

// server describes this daemon to the caller; only admins learn the details (addresses,
// pid, sockets), which governors have no use for.
func (a serverAPI) server(ctx context.Context, caller *auth.Caller) api.Server {
	srv := api.Server{
		ServerUntrusted: lxdapi.ServerUntrusted{
			APIExtensions: api.APIExtensions,
			APIStatus:     "stable",
			APIVersion:    "1.0",
			Auth:          "untrusted",
			AuthMethods:   []string{"tls"},
		},
		Config: map[string]any{},
	}

	if !caller.Trusted {
		return srv
	}

	srv.Auth = "trusted"
	if !caller.IsAdmin() {
		return srv
	}

	hostname, _ := os.Hostname()
	status := a.lxd.Status()
	lxdStatus := "online"
	if !status.Online {
		lxdStatus = "unavailable"
	}

	// Asked of dqlite each time: a member restarted without cluster flags is still one.
	members := 1
	if a.members != nil {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		members, _ = a.members(ctx)
	}

	srv.Environment = &api.ServerEnvironment{
		Addresses:              a.addresses(),
		Certificate:            a.certificatePEM,
		CertificateFingerprint: a.fingerprint,
		Server:                 "lxd-deployd",
		ServerName:             hostname,
		ServerVersion:          version.Version,
		ServerPid:              os.Getpid(),
		ServerClustered:        members > 1,
		HandlerPanics:          rest.HandlerPanics(),
		DatabaseAddress:        a.databaseAddress,
		LXDSocket:              a.lxd.Socket(),
		LXDStatus:              lxdStatus,
		LXDError:               status.Reason,
		LXDVersion:             status.ServerVersion,
		LXDPrivate:             a.lxdPrivate,
	}

	return srv
}
