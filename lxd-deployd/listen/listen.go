// Package listen opens the daemon's API listeners the way LXD does (the admin unix socket,
// root only; HTTPS with LXD's TLS settings; the addresses HTTPS is reached on) and serves
// on them: each request carries its listener's protocol and what the connection says of
// its peer, for the authenticators to read.
package listen

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"
)

// Unix listens on the admin socket (mode 0660, root: full access, like LXD's). A socket
// left by a dead daemon is replaced; one a live daemon answers on is not.
func Unix(path string) (net.Listener, error) {
	conn, err := net.DialTimeout("unix", path, time.Second)
	if err == nil {
		_ = conn.Close()
		return nil, fmt.Errorf("another daemon is listening on %s: stop it first", path)
	}

	err = os.Remove(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket %s: %w", path, err)
	}

	listener, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}

	err = os.Chmod(path, 0o660)
	if err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("set permissions of %s: %w", path, err)
	}

	return listener, nil
}

// TLSConfig is LXD's: TLS 1.3 only, client certificates requested but checked by
// fingerprint against the trust store rather than by the TLS stack. getCertificate answers
// for other names than the server's (a cluster's), nil for none.
func TLSConfig(cert tls.Certificate, getCertificate func(*tls.ClientHelloInfo) (*tls.Certificate, error)) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS13,
		ClientAuth:     tls.RequestClientCert,
		Certificates:   []tls.Certificate{cert},
		GetCertificate: getCertificate,
	}
}

// Addresses lists the host:port pairs the HTTPS API listening on httpsAddress can be
// reached on, for trust tokens and GET /1.0; a wildcard listen address expands to every
// address of the machine.
func Addresses(httpsAddress string) []string {
	if httpsAddress == "" {
		return []string{}
	}

	host, port, err := net.SplitHostPort(httpsAddress)
	if err != nil {
		return []string{httpsAddress}
	}

	ip := net.ParseIP(strings.Trim(host, "[]"))
	if host != "" && (ip == nil || !ip.IsUnspecified()) {
		return []string{httpsAddress}
	}

	ifaceAddrs, err := net.InterfaceAddrs()
	if err != nil {
		return []string{}
	}

	addresses := []string{}
	for _, addr := range ifaceAddrs {
		ipNet, ok := addr.(*net.IPNet)
		if !ok || ipNet.IP.IsLinkLocalUnicast() {
			continue
		}

		addresses = append(addresses, net.JoinHostPort(ipNet.IP.String(), port))
	}

	return addresses
}

// WithPprof adds Go's profiles under /debug/pprof/ to the unix socket's routes when the
// operator asked for them (--debug-pprof): never on HTTPS or a governor transport.
func WithPprof(router http.Handler, enabled bool) http.Handler {
	if !enabled {
		return router
	}

	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.Handle("/", router)
	return mux
}
