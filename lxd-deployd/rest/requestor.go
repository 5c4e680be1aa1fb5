package rest

import (
	"context"
	"net"
	"os/user"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/shared/api"
)

// RequestorFromContext captures who is asking, from the authenticated caller. Background
// work takes this value when it starts rather than holding on to the request.
func RequestorFromContext(ctx context.Context) api.DeploymentRequestor {
	caller := auth.CallerFromContext(ctx)
	if caller == nil {
		return api.InternalRequestor("unknown")
	}

	by := api.DeploymentRequestor{Protocol: caller.Protocol, Name: caller.Name, Fingerprint: caller.Fingerprint}
	if caller.Protocol == auth.ProtocolGovernor && caller.Instance != "" {
		by.Name += "@" + caller.Instance
	}

	return by
}

// UnixPeerName names the local user at the other end of a unix socket connection (its
// SO_PEERCRED uid), so that changes made through the admin socket say who made them.
func UnixPeerName(conn net.Conn) string {
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
