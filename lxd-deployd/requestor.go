package main

import (
	"context"
	"database/sql"
	"net"
	"os/user"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/lxd-deployd/lxd-deployd/db"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// requestorFromContext captures who is asking, from the authenticated caller. Background
// work takes this value when it starts rather than holding on to the request.
func requestorFromContext(ctx context.Context) api.DeploymentRequestor {
	caller := auth.CallerFromContext(ctx)
	if caller == nil {
		return internalRequestor("unknown")
	}

	by := api.DeploymentRequestor{Protocol: caller.Protocol, Name: caller.Name, Fingerprint: caller.Fingerprint}
	if caller.Protocol == auth.ProtocolGovernor && caller.Instance != "" {
		by.Name += "@" + caller.Instance
	}

	return by
}

// internalRequestor names a part of the daemon acting on its own (reconcile, a rollout).
func internalRequestor(component string) api.DeploymentRequestor {
	return api.DeploymentRequestor{Protocol: api.RequestorInternal, Name: component}
}

// withKey adds the deployment key a deployments certificate acts through on a deployment:
// certificates are shared across deployments, keys say which grant was used.
func withKey(ctx context.Context, tx *sql.Tx, by api.DeploymentRequestor, deploymentID int64) (api.DeploymentRequestor, error) {
	if by.Fingerprint == "" || by.Key != "" {
		return by, nil
	}

	keys, err := db.GetKeys(ctx, tx, db.KeyFilter{Fingerprint: by.Fingerprint, DeploymentID: deploymentID})
	if err != nil {
		return by, err
	}

	if len(keys) > 0 {
		by.Key = keys[0].Name
	}

	return by, nil
}

// unixPeerName names the local user at the other end of a unix socket connection (its
// SO_PEERCRED uid), so that changes made through the admin socket say who made them.
func unixPeerName(conn net.Conn) string {
	unixConn, ok := conn.(*net.UnixConn)
	if !ok {
		return ""
	}

	raw, err := unixConn.SyscallConn()
	if err != nil {
		return ""
	}

	var cred *unix.Ucred
	_ = raw.Control(func(fd uintptr) {
		cred, err = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	})
	if err != nil || cred == nil {
		return ""
	}

	uid := strconv.FormatUint(uint64(cred.Uid), 10)
	u, err := user.LookupId(uid)
	if err != nil {
		return "uid " + uid
	}

	return u.Username
}
