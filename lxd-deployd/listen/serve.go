package listen

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/auth"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/governor"
	"github.com/lxd-deployd/lxd-deployd/lxd-deployd/rest"
)

type listenerKey struct{}

type governorConnKey struct{}

type unixPeerKey struct{}

// Server returns the HTTP server of a listener of the protocol: every request carries the
// protocol (Protocol) and what its connection says of the peer (the TLS connection, the
// governor transport's instance: GovernorConn, the unix peer: UnixPeer); HTTPS
// connections count against conns' budgets.
func Server(handler http.Handler, protocol string, logger *slog.Logger, conns *rest.ConnLimits) *http.Server {
	server := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelDebug),
		BaseContext: func(net.Listener) context.Context {
			return context.WithValue(context.Background(), listenerKey{}, protocol)
		},
		ConnContext: func(ctx context.Context, c net.Conn) context.Context {
			c = rest.UnwrapConn(c)
			tc, ok := c.(*tls.Conn)
			if ok {
				return context.WithValue(ctx, rest.TLSConnKey{}, tc)
			}

			conn, ok := c.(*governor.Conn)
			if ok {
				return context.WithValue(ctx, governorConnKey{}, conn)
			}

			if protocol == auth.ProtocolUnix {
				return context.WithValue(ctx, unixPeerKey{}, rest.UnixPeerName(c))
			}

			return ctx
		},
	}

	if protocol == auth.ProtocolTLS {
		conns.CheckFileLimit()
		server.ConnState = conns.ConnState
		connContext := server.ConnContext
		server.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return connContext(conns.WithConn(ctx, c), c)
		}
	}

	return server
}

// Serve runs the server on the listener in the background; it logs why it stopped unless
// it was shut down.
func Serve(server *http.Server, listener net.Listener, protocol string, logger *slog.Logger) {
	go func() {
		err := server.Serve(listener)
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("API server stopped", "protocol", protocol, "err", err)
		}
	}()
}

// Protocol is the protocol of the listener a request came in on (auth.Protocol*).
func Protocol(r *http.Request) string {
	protocol, _ := r.Context().Value(listenerKey{}).(string)
	return protocol
}

// UnixPeer names the process calling on the unix socket.
func UnixPeer(r *http.Request) string {
	name, _ := r.Context().Value(unixPeerKey{}).(string)
	return name
}

// GovernorConn is the governor transport a request came through (nil: none).
func GovernorConn(r *http.Request) *governor.Conn {
	conn, _ := r.Context().Value(governorConnKey{}).(*governor.Conn)
	return conn
}
