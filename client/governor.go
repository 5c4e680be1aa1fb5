package client

import (
	"context"
	"net"
	"net/http"

	"github.com/mdlayher/vsock"
)

// Inside an instance, a governor reaches lxd-deployd without TLS: through the unix socket
// LXD proxies into containers, or over vsock from a VM. Each request carries a fresh token
// from ConnectionArgs.TokenSource; the daemon learns which instance is calling from the
// transport itself.

// GovernorSocket is where the proxied socket appears inside a container.
const GovernorSocket = "/dev/lxd-deployd.sock"

// hostCID is the vsock context id of the host, as seen from a VM.
const hostCID = 2

// ConnectVsock connects to the daemon on the host from inside a VM.
func ConnectVsock(port uint32, args *ConnectionArgs) (*Server, error) {
	if args == nil {
		args = &ConnectionArgs{}
	}

	transport := &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return vsock.Dial(hostCID, port, nil)
		},
	}

	return newServer("http://vsock", transport, args), nil
}
